"""A lean HTTP/1.1 client for the proxied requests: keep-alive connections per upstream, and a
response body that goes from the upstream socket to the client socket inside one callback.

Why not aiohttp's client here: per streamed chunk it parses, queues the bytes in a
StreamReader, wakes a coroutine that reads them and awaits a write: several Python frames
and an event-loop round trip per chunk. Here data_received() feeds llhttp (httptools, the
parser uvicorn uses in vLLM itself) and writes what it found on at once, one write per read.

The framing is the parser's, strict: both Transfer-Encoding and Content-Length, two
Content-Lengths, a malformed chunk, bytes past the end of a response or bytes on an idle
connection make the connection unusable: it is closed, never reused, so what an upstream
sends can never be read as the answer to another client's request. The relay knows the
request's method: the answer to HEAD (like 1xx, 204 and 304) has no body.

A chunked body goes on as the upstream's chunks, each once it is complete (the same framing
uvicorn writes: `%x\r\n`, data, CRLF); only the final zero-length chunk is left for the client
writer to add. Holding an incomplete chunk back means an upstream that dies mid-chunk leaves
the client's framing whole: the error event that follows is a chunk of its own.

Backpressure stays: when the client socket's buffer passes a bound, reading from the upstream
pauses until the client has drained (TCP then slows the engine), so a slow client never grows
the gateway's memory. Closing an unfinished upstream connection is how the engine learns to
abort the request.
"""

from __future__ import annotations

import asyncio
import select
import ssl
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

import httptools
from multidict import CIMultiDict

from sm121.errors import Sm121Error

_HEAD_LIMIT = 64 * 1024
_CHUNK_HOLD = 64 * 1024  # an incomplete chunk past this goes on as a chunk of its own
_IDLE_S = 4.0  # uvicorn (vLLM) closes idle keep-alive connections after 5 s
_CLIENT_BUFFER = 256 * 1024  # pause the upstream above this much unsent to the client
_NO_BODY = frozenset({204, 304})

Sink = Callable[[bytes, bytes], None]  # (bytes to forward as they are, payload for observers)


class UpstreamClosed(Sm121Error):
    """The upstream closed the connection before the response was complete, or broke the
    framing (then the gateway closed it)."""


class UpstreamAbandoned(UpstreamClosed):
    """The gateway gave up on the upstream (silent and not answering /health): not retried
    on the same upstream."""


class _Stray(Sm121Error):
    """Bytes after the end of the response: raised inside a parser callback to stop it
    (httptools turns it into an HttpParserCallbackError)."""

    def __init__(self) -> None:
        super().__init__("bytes after the end of the response")


@dataclass(frozen=True)
class Head:
    status: int
    reason: str
    headers: CIMultiDict[str]
    chunked: bool
    length: int | None  # Content-Length (for HEAD: a GET's); None: chunked, or ends at the close
    keep_alive: bool


class RelayProtocol(asyncio.Protocol):
    """One upstream connection; one request at a time."""

    def __init__(self) -> None:
        loop = asyncio.get_running_loop()
        self._loop = loop
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.spoiled = False  # broken framing or stray bytes: never to be reused
        self.idle_since = 0.0
        self.reads = 0  # data_received calls: the stall watch's sign of life (stalls.py)
        self.reads_seen = 0
        self._reset()

    def _reset(self) -> None:
        self.head: asyncio.Future[Head] = self._loop.create_future()
        self.done: asyncio.Future[None] = self._loop.create_future()
        self._parser = httptools.HttpResponseParser(self)
        self._method = ""  # set by send(); bytes before it are bytes on an idle connection
        self._reason = b""
        self._fields: list[tuple[bytes, bytes]] = []
        self._head: Head | None = None
        self._head_bytes = 0
        self._complete = False  # the response is whole: anything more is stray
        self._interim = False  # inside a 1xx response
        self._held: list[bytes] = []  # the current chunk's payload so far
        self._held_size = 0
        self._raw: list[bytes] = []  # what this read found, to go on in one write
        self._payload: list[bytes] = []
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
        head = self._head
        if (head is not None and not head.chunked and head.length is None and exc is None
                and not self.spoiled):
            self._finish()  # a body delimited by the connection's end is complete now (a reset
            # is not an end: the body may be cut short)
        elif not self.done.done():
            self.done.set_exception(failure)
        # Retrieved or not, a failure must not be logged as "never retrieved".
        for future in (self.head, self.done):
            if future.done() and not future.cancelled():
                future.exception()

    def data_received(self, data: bytes) -> None:
        self.reads += 1
        if self._complete or not self._method:
            self._spoil()  # past the end, or on an idle connection: nobody's answer
            return
        before = self._head is None
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._fail("the upstream switched protocols, which the gateway never asks for")
        except httptools.HttpParserError as exc:
            if self._complete:  # the response is whole; what follows it is nobody's
                self._spoil()
            else:
                self._fail(f"the upstream broke HTTP framing ({exc})")
        finally:
            if self._payload:
                self._deliver()
        # Counted once the parser has seen the read: a head that ended in it is whole, and
        # the body that came along (one read of a large answer holds up to 256 KB) is not
        # head. Only a head still open past the limit is refused; each read is bounded.
        if before and self._head is None:
            self._head_bytes += len(data)
            if self._head_bytes > _HEAD_LIMIT:
                self._fail("the upstream's response head is too large")
        if self.spoiled and self.transport is not None:
            self.transport.close()

    # ---- httptools callbacks ------------------------------------------------------------

    def on_message_begin(self) -> None:
        if self._complete:
            self._stray()

    def on_status(self, reason: bytes) -> None:
        self._reason += reason

    def on_header(self, name: bytes, value: bytes) -> None:
        if self._head is None:  # trailers come here too: they are dropped
            self._fields.append((name, value))

    def on_headers_complete(self) -> None:
        if self._complete:
            self._stray()
        status = self._parser.get_status_code()
        if 100 <= status < 200 and status != 101:  # 100 Continue and friends: the real head follows
            self._interim, self._fields, self._reason = True, [], b""
            return
        headers: CIMultiDict[str] = CIMultiDict(
            (n.decode("latin-1"), v.decode("latin-1")) for n, v in self._fields)
        # llhttp has refused a Transfer-Encoding beside a Content-Length, and any other
        # coding than chunked last is a body delimited by the close.
        coding = headers.get("Transfer-Encoding", "")
        chunked = bool(coding) and coding.rsplit(",", 1)[-1].strip().lower() == "chunked"
        length_text = headers.get("Content-Length")
        length = None if coding or length_text is None else int(length_text)
        bodyless = self._method == "HEAD" or status in _NO_BODY
        if status in _NO_BODY:
            chunked, length = False, 0
        keep = self._parser.should_keep_alive() and (chunked or length is not None or bodyless)
        self._head = Head(status, self._reason.decode("latin-1"), headers, chunked, length, keep)
        self.head.set_result(self._head)
        if bodyless:
            self.on_message_complete()  # whatever follows is stray (llhttp reads it as a body)

    def on_body(self, data: bytes) -> None:
        if self._complete:
            self._stray()
        assert self._head is not None
        if not self._head.chunked:
            self._raw.append(data)
            self._payload.append(data)
            return
        self._held.append(data)
        self._held_size += len(data)
        if self._held_size > _CHUNK_HOLD:
            self.on_chunk_complete()

    def on_chunk_complete(self) -> None:
        if not self._held_size:
            return
        payload = self._held[0] if len(self._held) == 1 else b"".join(self._held)
        self._held, self._held_size = [], 0
        self._raw.append(b"%x\r\n%b\r\n" % (len(payload), payload))
        self._payload.append(payload)

    def on_message_complete(self) -> None:
        if self._interim:
            self._interim = False
            return
        self._complete = True
        self._finish()

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
        self._method = method.upper()
        self.transport.write(head + body if body else head)

    def attach(self, sink: Sink) -> None:
        """Start delivering the body; what arrived with the head goes first."""
        self._sink = sink
        early, self._early = self._early, []
        for raw, payload in early:
            sink(raw, payload)

    # ---- delivery and ends --------------------------------------------------------------

    def _deliver(self) -> None:
        raw, payload = self._raw, self._payload
        self._raw, self._payload = [], []
        joined = (raw[0] if len(raw) == 1 else b"".join(raw),
                  payload[0] if len(payload) == 1 else b"".join(payload))
        if self._sink is None:
            self._early.append(joined)
        else:
            self._sink(*joined)

    def _stray(self) -> None:
        self.spoiled = True
        raise _Stray

    def _spoil(self) -> None:
        self.spoiled = True
        if self.transport is not None:
            self.transport.close()

    def _finish(self) -> None:
        if not self.done.done():
            self.done.set_result(None)

    def _fail(self, message: str, kind: type[UpstreamClosed] = UpstreamClosed) -> None:
        failure = kind(message)
        self._held, self._held_size, self._complete = [], 0, True  # nothing more goes on
        for future in (self.head, self.done):
            if not future.done():
                future.set_exception(failure)
                future.exception()
        self._spoil()

    def abandon(self, why: str) -> None:
        """End the exchange now, as if the upstream had died: a stream gets its error event,
        a request still waiting for its head may go to another upstream."""
        self._fail(why, UpstreamAbandoned)

    def reusable(self) -> bool:
        return (not self.closed and not self.spoiled and self._head is not None
                and self._head.keep_alive and self._complete and self.done.done()
                and not self.done.exception())

    def quiet(self) -> bool:
        """Nothing to read and no end seen: an idle connection fit to carry a request. The
        socket is asked too, for bytes that arrived since the loop last looked."""
        if self.closed or self.spoiled or self.transport is None:
            return False
        sock = self.transport.get_extra_info("socket")
        if sock is None:
            return False
        readable, _, _ = select.select([sock.fileno()], [], [], 0)
        return not readable

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
            if now - proto.idle_since < _IDLE_S and proto.quiet():
                self.busy.add(proto)
                return proto, True
            if proto.transport is not None:  # closed, spoiled, or it spoke while idle
                proto.transport.close()
        loop = asyncio.get_running_loop()
        _, proto = await asyncio.wait_for(
            loop.create_connection(RelayProtocol, self.hostname, self.port, ssl=self._ssl),
            self._timeout)
        self.busy.add(proto)
        return proto, False

    def release(self, proto: RelayProtocol) -> None:
        """Every acquire ends here, on every path: a connection not fit for reuse closes."""
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
