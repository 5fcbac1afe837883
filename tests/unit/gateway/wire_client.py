"""A client that reads the gateway's answer as a correct HTTP/1.1 client must: h11 is the
oracle. Each exchange uses its own connection to the gateway and ends in one of three ways:
a complete response, a connection closed before the end (`closed`), or a protocol error
(`broken`: a framing no correct client could read). A hang fails the test by timeout, which
is long: it tells a hang from an answer, not a slow answer from a fast one (in `make test`,
beside two engine sessions, a case that takes 0.06 s alone once took over 10 s)."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field

import h11


@dataclass
class Answer:
    status: int = 0
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    complete: bool = False  # h11 saw the end of the message
    closed: bool = False  # the gateway closed the connection before the end
    broken: str = ""  # h11's protocol error, if any
    partial_chunk: bool = False  # the connection ended inside a chunk

    def ids(self) -> set[str]:
        """Every id any answer in the body names (JSON bodies and SSE events alike)."""
        found: set[str] = set()
        for piece in self.body.replace(b"data: ", b"\n").split(b"\n"):
            try:
                value = json.loads(piece)
            except ValueError:
                continue
            if isinstance(value, dict) and isinstance(value.get("id"), str):
                found.add(value["id"])
        return found


async def exchange(base_url: str, rid: str, method: str = "POST", stream: bool = False,
                   timeout_s: float = 60.0) -> Answer:
    host_port = base_url.removeprefix("http://")
    host, _, port = host_port.partition(":")
    target = "/v1/chat/completions" if method == "POST" else "/version"
    body = json.dumps({"model": "fake", "stream": stream,
                       "messages": [{"role": "user", "content": f"hi {rid}"}]}).encode()
    headers = [("Host", host_port), ("x-test-id", rid), ("Content-Type", "application/json")]
    if method == "POST":
        headers.append(("Content-Length", str(len(body))))
    conn = h11.Connection(our_role=h11.CLIENT)
    reader, writer = await asyncio.open_connection(host, int(port))
    answer = Answer()
    try:
        out = conn.send(h11.Request(method=method, target=target, headers=headers))
        if method == "POST":
            out += conn.send(h11.Data(data=body))
        out += conn.send(h11.EndOfMessage())
        writer.write(out)
        await asyncio.wait_for(_read(conn, reader, answer), timeout_s)
    finally:
        writer.close()
    return answer


async def _read(conn: h11.Connection, reader: asyncio.StreamReader, answer: Answer) -> None:
    parts, in_chunk = [], False
    while True:
        try:
            event = conn.next_event()
        except h11.RemoteProtocolError as exc:
            if "peer closed connection" in str(exc):
                answer.closed, answer.partial_chunk = True, in_chunk
            else:
                answer.broken = str(exc) or type(exc).__name__
            break
        if event is h11.NEED_DATA:
            data = await reader.read(65536)
            conn.receive_data(data)  # b"" tells h11 the connection closed
            continue
        if isinstance(event, h11.Response):
            answer.status = event.status_code
            answer.headers = {k.decode().lower(): v.decode() for k, v in event.headers}
        elif isinstance(event, h11.Data):
            parts.append(bytes(event.data))
            in_chunk = not event.chunk_end
        elif isinstance(event, h11.EndOfMessage):
            answer.complete = True
            break
        elif isinstance(event, h11.ConnectionClosed):
            answer.closed = True
            break
    answer.body = b"".join(parts)
