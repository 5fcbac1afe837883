"""A fake, hostile upstream for the relay's conformance tests: a raw asyncio server that
writes exact bytes, so it can break HTTP framing the way no HTTP library would let it.

It answers the gateway's own calls (/v1/models, /health, /metrics, /tokenize) correctly. A
proxied request (POST /v1/chat/completions, GET or HEAD /version) carries an `x-test-id`
header; the answer echoes that id and misbehaves as `plan[id]` (or `default`) says:

    cl           a Content-Length JSON body                       {"id": ID}
    sse          a chunked event stream: one event with the id, then [DONE]
    stray_after  cl, and a whole second response in the same write
    te_cl        Transfer-Encoding: chunked and Content-Length, smuggling a response
    dup_cl       two different Content-Lengths
    continue     100 Continue, then cl
    drip         cl, one byte per write
    drip_sse     sse, one byte per write
    die_chunk    sse head, the id's event, half a chunk, then the connection closes
    die_json     a chunked JSON body cut mid-chunk
    close        cl with Connection: close, then the close
    eof_body     a body delimited by the close (no length, no chunking)
    s204, s304   204 or 304 announcing a Content-Length it does not send
    drop         the connection closes with no answer at all
    head         the right answer to HEAD: headers, a Content-Length, no body

`inject_idle()` writes a whole stray response on every connection now between requests.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field

from support import free_port

STRAY = "STRAY"


def _response(body: bytes, *head: str, status: str = "200 OK") -> bytes:
    lines = [f"HTTP/1.1 {status}", "Content-Type: application/json",
             f"Content-Length: {len(body)}", *head]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def _json(rid: str) -> bytes:
    return json.dumps({"id": rid}).encode()


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%b\r\n" % (len(data), data)


SSE_HEAD = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n")


def _event(rid: str) -> bytes:
    return b"data: " + _json(rid) + b"\n\n"


def _sse(rid: str) -> bytes:
    return SSE_HEAD + _chunk(_event(rid)) + _chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n"


def stray_response() -> bytes:
    return _response(_json(STRAY))


@dataclass
class FakeHostileUpstream:
    default: str = "cl"
    plan: dict[str, str] = field(default_factory=dict)
    port: int = 0
    served: int = 0  # proxied requests answered
    connections: int = 0  # opened by the gateway, in all
    _idle: set[asyncio.StreamWriter] = field(default_factory=set)
    _server: asyncio.Server | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> FakeHostileUpstream:
        self.port = free_port()
        self._server = await asyncio.start_server(self._connection, "127.0.0.1", self.port)
        return self

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            for writer in list(self._idle):
                writer.close()
            await self._server.wait_closed()

    def inject_idle(self) -> int:
        """A stray response on every idle connection; how many got one. The bytes are in the
        gateway's socket buffer when this returns (a loopback write of an empty buffer)."""
        for writer in self._idle:
            writer.write(stray_response())
        return len(self._idle)

    async def _connection(self, reader: asyncio.StreamReader,
                          writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                self._idle.add(writer)
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                self._idle.discard(writer)
                method, target, headers = _parse(head)
                length = int(headers.get("content-length", "0"))
                body = await reader.readexactly(length) if length else b""
                if not await self._answer(writer, method, target, headers, body):
                    return
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        finally:
            self._idle.discard(writer)
            writer.close()

    async def _answer(self, writer: asyncio.StreamWriter, method: str, target: str,
                      headers: dict[str, str], body: bytes) -> bool:
        """Write the answer; whether the connection stays open."""
        rid = headers.get("x-test-id")
        if rid is None:
            writer.write(_own(target, body))
            return True
        self.served += 1
        how = self.plan.get(rid, "head" if method == "HEAD" else self.default)
        ok = _json(rid)
        if how == "cl":
            writer.write(_response(ok))
        elif how == "sse":
            writer.write(_sse(rid))
        elif how == "stray_after":
            writer.write(_response(ok) + stray_response())
        elif how == "te_cl":
            smuggled = b"0\r\n\r\n" + stray_response()
            writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
                         b"Content-Length: %d\r\n\r\n%b" % (len(smuggled), smuggled))
        elif how == "dup_cl":
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nContent-Length: %d\r\n\r\n%b"
                         % (len(ok), len(ok) + 20, ok + b" " * 20))
        elif how == "continue":
            writer.write(b"HTTP/1.1 100 Continue\r\n\r\n" + _response(ok))
        elif how in ("drip", "drip_sse"):
            for byte in _response(ok) if how == "drip" else _sse(rid):
                writer.write(bytes([byte]))
                await writer.drain()
                await asyncio.sleep(0)
        elif how == "die_chunk":
            half = _chunk(b"data: " + _json(STRAY) + b"\n\n")
            writer.write(SSE_HEAD + _chunk(_event(rid)) + half[:len(half) // 2])
            await writer.drain()
            return False
        elif how == "die_json":
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                         b"Transfer-Encoding: chunked\r\n\r\n" + _chunk(ok[:5]) + b"20\r\nab")
            await writer.drain()
            return False
        elif how == "close":
            writer.write(_response(ok, "Connection: close"))
            await writer.drain()
            return False
        elif how == "eof_body":
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n" + ok)
            await writer.drain()
            return False
        elif how == "drop":
            return False
        elif how in ("s204", "s304"):
            status = "204 No Content" if how == "s204" else "304 Not Modified"
            writer.write(f"HTTP/1.1 {status}\r\nContent-Length: 42\r\n\r\n".encode())
        elif how == "head":
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                         b"Content-Length: %d\r\n\r\n" % len(ok))
        else:
            raise AssertionError(f"no such behaviour {how!r}")
        await writer.drain()
        return True


def _parse(head: bytes) -> tuple[str, str, dict[str, str]]:
    lines = head.decode("latin-1").split("\r\n")
    method, target, _ = lines[0].split(" ", 2)
    headers = {}
    for line in lines[1:]:
        if line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    return method, target, headers


def _own(target: str, body: bytes) -> bytes:
    """The gateway's own calls, answered as vLLM would."""
    path = target.split("?", 1)[0]
    if path == "/v1/models":
        return _response(json.dumps({"object": "list", "data": [
            {"id": "fake", "object": "model", "max_model_len": 4096}]}).encode())
    if path == "/tokenize":
        return _response(json.dumps({"count": max(1, len(body) // 4), "tokens": [],
                                     "max_model_len": 4096}).encode())
    if path == "/metrics":
        return _response(b"")
    return _response(b"{}")
