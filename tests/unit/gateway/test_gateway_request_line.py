"""The request line the gateway writes upstream keeps the client's URL encoding: a decoded
%0D%0A in a path or query would end the line and let a client add headers of its choice
(request smuggling past the gateway's own checks). The upstream here is a raw socket server
that records the bytes it receives: the point is the exact bytes on the wire."""

from __future__ import annotations

import asyncio

from gateway_harness import running_gateway
from support import free_port
from yarl import URL

from sm121.gateway.relay import RelayProtocol

REPLY = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"


async def _recording_server(seen: list[bytes]) -> tuple[asyncio.Server, str]:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                seen.append(head)
                writer.write(REPLY)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    port = free_port()
    server = await asyncio.start_server(handle, "127.0.0.1", port)
    return server, f"http://127.0.0.1:{port}"


async def test_an_encoded_line_break_stays_encoded_upstream() -> None:
    seen: list[bytes] = []
    server, url = await _recording_server(seen)
    try:
        async with running_gateway(url) as gw:
            target = "/version?a=%0D%0AInjected:%20yes&b=%20x"
            response = await gw.http.get(URL(gw.url + target, encoded=True))
            assert response.status == 200
        (head,) = [h for h in seen if h.startswith(b"GET /version")]
        assert head.split(b"\r\n")[0] == f"GET {target} HTTP/1.1".encode()
        assert b"Injected" not in head.split(b"\r\n", 1)[1]
    finally:
        server.close()
        await server.wait_closed()


def test_the_relay_refuses_a_line_break_in_what_it_writes() -> None:
    class Transport:
        written: list[bytes] = []

        def write(self, data: bytes) -> None:
            self.written.append(data)

    async def go() -> None:
        proto = RelayProtocol()
        proto.transport = Transport()  # type: ignore[assignment]
        for target, headers in (("/v1\r\nX: y", []), ("/v1", [("A", "b\r\nX: y")]),
                                ("/v1", [("A\n", "b")])):
            try:
                proto.send("GET", target, "h", headers, None)
            except ValueError:
                continue
            raise AssertionError(f"sent {target!r} {headers!r}")
        assert Transport.written == []

    asyncio.run(go())
