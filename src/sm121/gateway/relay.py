"""A lean HTTP/1.1 client for the proxied requests: keep-alive connections per upstream, and a
response body that goes from the upstream socket to the client socket inside one callback.

Why not aiohttp's client here: per streamed chunk it parses, queues the bytes in a
StreamReader, wakes a coroutine that reads them and awaits a write: several Python frames
and an event-loop round trip per chunk. Here data_received() finds the chunk boundaries (to
know the end, and to hand the payload to the observer) and writes the bytes on at once. When
both sides use chunked encoding the upstream's framed bytes are forwarded as they are (no
re-framing copy); only the final zero-length chunk is left for the client writer to add.

Backpressure stays: when the client socket's buffer passes a bound, reading from the upstream
pauses until the client has drained (TCP then slows the engine), so a slow client never grows
the gateway's memory. Closing an unfinished upstream connection is how the engine learns to
abort the request.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from multidict import CIMultiDict

_HEAD_LIMIT = 64 * 1024
_IDLE_S = 4.0  # uvicorn (vLLM) closes idle keep-alive connections after 5 s
_CLIENT_BUFFER = 256 * 1024  # pause the upstream above this much unsent to the client
_NO_BODY = frozenset({204, 304})

_SIZE, _DATA, _DATA_END, _TRAILER = range(4)  # a chunked body: size line, data, CRLF, trailers
Sink = Callable[[bytes, bytes], None]  # (bytes to forward as they are, payload for observers)


class UpstreamClosed(Exception):
    """The upstream closed the connection before the response was complete."""


class UpstreamAbandoned(UpstreamClosed):
    """The gateway gave up on the upstream (silent and not answering /health): not retried
    on the same upstream."""


@dataclass(frozen=True)
class Head:
    status: int
    reason: str
    headers: CIMultiDict[str]
    chunked: bool
    length: int | None
    keep_alive: bool


class RelayProtocol(asyncio.Protocol):
    """One upstream connection; one request at a time."""

    def __init__(self) -> None:
        loop = asyncio.get_running_loop()
        self._loop = loop
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.idle_since = 0.0
        self.reads = 0  # data_received calls: the stall watch's sign of life (stalls.py)
        self.reads_seen = 0
        self._reset()

    def _reset(self) -> None:
        self.head: asyncio.Future[Head] = self._loop.create_future()
        self.done: asyncio.Future[None] = self._loop.create_future()
        self._buf = b""
        self._head: Head | None = None
        self._remaining = 0  # bytes of the current chunk (or of a Content-Length body)
        self._state = _SIZE  # where a chunked body's parse stands
        self._sink: Sink | None = None
        self._early: list[tuple[bytes, bytes]] = []

    # ---- asyncio callbacks --------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        failure = UpstreamClosed(f"the upstream closed the connection ({exc!r})"
                                 if exc else "the upstream closed the connection")
        if not self.head.done():
            self.head.set_exception(failure)
        if self._head is not None and not self._head.chunked and self._head.length is None:
            self._finish()  # a body delimited by the connection's end is complete now
        elif not self.done.done():
            self.done.set_exception(failure)
        # Retrieved or not, a failure must not be logged as "never retrieved".
        for future in (self.head, self.done):
            if future.done() and not future.cancelled():
                future.exception()

    def data_received(self, data: bytes) -> None:
        self.reads += 1
        if self._head is None:
            data = self._parse_head(self._buf + data if self._buf else data)
            if self._head is None or not data:
                return
        if self._head.chunked:
            self._chunked(data)
        else:
            self._plain(data)

    # ---- request ------------------------------------------------------------------------

    def send(self, method: str, target: str, host: str, headers: Iterable[tuple[str, str]],
             body: bytes | None) -> None:
        lines = [f"{method} {target} HTTP/1.1", f"Host: {host}"]
        lines += [f"{k}: {v}" for k, v in headers]
        if body is not None or method == "POST":
            lines.append(f"Content-Length: {len(body or b'')}")
        text = "\r\n".join(lines)
        # The target arrives still URL-encoded and aiohttp refuses raw line breaks in headers;
        # this is the last guard: a line break here would let a client write its own headers.
        if "\n" in text.replace("\r\n", "") or text.count("\r") != len(lines) - 1:
            raise ValueError("refusing to send a request line or header with a line break")
        head = (text + "\r\n\r\n").encode("latin-1")
        assert self.transport is not None
        self.transport.write(head + body if body else head)

    def attach(self, sink: Sink) -> None:
        """Start delivering the body; what arrived with the head goes first."""
        self._sink = sink
        early, self._early = self._early, []
        for raw, payload in early:
            sink(raw, payload)

    # ---- response parsing ---------------------------------------------------------------

    def _parse_head(self, data: bytes) -> bytes:
        end = data.find(b"\r\n\r\n")
        if end < 0:
            if len(data) > _HEAD_LIMIT:
                self._fail("the upstream's response head is too large")
            self._buf = data
            return b""
        self._buf = b""
        lines = data[:end].decode("latin-1").split("\r\n")
        version, _, rest = lines[0].partition(" ")
        code, _, reason = rest.partition(" ")
        if not code.isdigit():
            self._fail(f"the upstream sent no HTTP status line ({lines[0][:80]!r})")
            return b""
        status = int(code)
        if 100 <= status < 200:  # 100 Continue and friends: the real head follows
            return self._parse_head(data[end + 4:])
        headers: CIMultiDict[str] = CIMultiDict()
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers.add(name.strip(), value.strip())
        chunked = "chunked" in headers.get("Transfer-Encoding", "").lower()
        length_text = headers.get("Content-Length")
        length = int(length_text) if length_text and length_text.isdigit() else None
        if status in _NO_BODY:
            chunked, length = False, 0
        keep = (version == "HTTP/1.1"
                and "close" not in headers.get("Connection", "").lower()
                and (chunked or length is not None))
        self._head = Head(status, reason, headers, chunked, length, keep)
        self._remaining = length or 0
        self.head.set_result(self._head)
        if length == 0:
            self._finish()
        return data[end + 4:]

    def _plain(self, data: bytes) -> None:
        assert self._head is not None
        if self._head.length is not None:
            data = data[:self._remaining]
            self._remaining -= len(data)
        if data:
            self._deliver(data, data)
        if self._head.length is not None and self._remaining == 0:
            self._finish()

    def _chunked(self, data: bytes) -> None:
        """Find the chunk boundaries: forward the framed bytes up to the last chunk (the
        client writer adds its own), hand the payload to the observers, know the end."""
        buf = self._buf + data if self._buf else data
        in_trailers = self._state == _TRAILER
        pos, size, payload, last_at, complete = 0, len(buf), [], -1, False
        while pos < size:
            state = self._state
            if state == _DATA:
                take = min(self._remaining, size - pos)
                payload.append(buf[pos:pos + take])
                pos += take
                self._remaining -= take
                if not self._remaining:
                    self._state = _DATA_END
            elif state == _DATA_END:
                if size - pos < 2:
                    break
                pos += 2
                self._state = _SIZE
            else:
                eol = buf.find(b"\r\n", pos)
                if eol < 0:
                    break
                if state == _TRAILER:
                    complete = eol == pos  # the blank line after the last chunk
                    pos = eol + 2
                    if complete:
                        break
                    continue
                try:
                    self._remaining = int(buf[pos:eol].split(b";", 1)[0], 16)
                except ValueError:
                    self._fail("the upstream sent a malformed chunk size")
                    return
                if self._remaining == 0:
                    last_at, self._state = pos, _TRAILER
                else:
                    self._state = _DATA
                pos = eol + 2
        self._buf = buf[pos:]  # an incomplete size line or CRLF: completed by the next read
        if len(self._buf) > _HEAD_LIMIT:  # a size line without an end: not HTTP
            self._fail("the upstream sent a chunk size line without an end")
            return
        raw = b"" if in_trailers else buf[:last_at] if last_at >= 0 else buf[:pos]
        self._deliver(raw, b"".join(payload) if len(payload) != 1 else payload[0])
        if complete:
            self._finish()

    def _deliver(self, raw: bytes, payload: bytes) -> None:
        if not raw and not payload:
            return
        if self._sink is None:
            self._early.append((raw, payload))
        else:
            self._sink(raw, payload)

    def _finish(self) -> None:
        if not self.done.done():
            self.done.set_result(None)

    def _fail(self, message: str, kind: type[UpstreamClosed] = UpstreamClosed) -> None:
        failure = kind(message)
        for future in (self.head, self.done):
            if not future.done():
                future.set_exception(failure)
                future.exception()
        if self.transport is not None:
            self.transport.close()

    def abandon(self, why: str) -> None:
        """End the exchange now, as if the upstream had died: a stream gets its error event,
        a request still waiting for its head may go to another upstream."""
        self._fail(why, UpstreamAbandoned)

    def reusable(self) -> bool:
        return (not self.closed and self._head is not None and self._head.keep_alive
                and self.done.done() and not self.done.exception() and not self._buf)

    def recycle(self) -> None:
        self._reset()
        self.idle_since = time.monotonic()


class UpstreamPool:
    """Keep-alive connections to one upstream."""

    def __init__(self, url: str, connect_timeout_s: float) -> None:
        parts = urlsplit(url)
        self.secure = parts.scheme == "https"
        self.hostname = parts.hostname or "127.0.0.1"
        self.port = parts.port or (443 if self.secure else 80)
        self.host = parts.netloc
        self.prefix = parts.path.rstrip("/")
        self._timeout = connect_timeout_s
        self._idle: list[RelayProtocol] = []
        self.busy: set[RelayProtocol] = set()  # acquired and not yet released
        self._ssl = ssl.create_default_context() if self.secure else None

    async def acquire(self) -> tuple[RelayProtocol, bool]:
        """A connection, and whether it was reused (a reused one may have just been closed
        by the server: the caller retries once on a fresh one)."""
        now = time.monotonic()
        while self._idle:
            proto = self._idle.pop()
            if not proto.closed and now - proto.idle_since < _IDLE_S:
                self.busy.add(proto)
                return proto, True
            if proto.transport is not None:
                proto.transport.close()
        loop = asyncio.get_running_loop()
        _, proto = await asyncio.wait_for(
            loop.create_connection(RelayProtocol, self.hostname, self.port, ssl=self._ssl),
            self._timeout)
        self.busy.add(proto)
        return proto, False

    def release(self, proto: RelayProtocol) -> None:
        self.busy.discard(proto)
        if proto.reusable():
            proto.recycle()
            self._idle.append(proto)
        elif proto.transport is not None:
            proto.transport.close()

    def heard_from(self) -> bool:
        """Whether any connection in use has read something since the last call."""
        heard = False
        for proto in self.busy:
            if proto.reads != proto.reads_seen:
                proto.reads_seen, heard = proto.reads, True
        return heard

    def abandon_busy(self, why: str) -> int:
        """End every exchange in use (see RelayProtocol.abandon); how many there were."""
        busy = list(self.busy)
        for proto in busy:
            proto.abandon(why)
        return len(busy)

    def close(self) -> None:
        for proto in self._idle:
            if proto.transport is not None:
                proto.transport.close()
        self._idle.clear()


def client_buffer_full(transport: asyncio.Transport) -> bool:
    return transport.get_write_buffer_size() > _CLIENT_BUFFER
