"""Forward one request to the upstream and pass the response back chunk by chunk.

Each chunk is written to the client as soon as it is read, from the upstream connection's
own data callback (relay.py). When the client's socket buffer passes a bound, reading from
the upstream pauses until the client drains: a slow client slows the engine (TCP
backpressure) instead of growing a buffer in the gateway. When the client goes away the
upstream connection is closed, which is how vLLM learns to abort the request and free its
sequence.

A connect that fails without proof that the engine is gone (a timeout, any error but a
refusal) is tried once more after a short pause before the client gets an answer: nothing of
the request was sent, so sending it on the second connection is safe. Its cause is most
often the gateway's own host, not the engine: a process stalled longer than the connect
timeout (a loaded 2-core host, memory reclaim) wakes with the timer and the finished connect
both due, and the event loop runs the timer first, so a connect to a live, listening engine
fails. A refusal is proof (nothing listens on the port) and answers at once, so a dead engine
costs a prompt 503, not a retry storm.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from aiohttp import web
from aiohttp.abc import AbstractStreamWriter
from prometheus_client import Histogram

from sm121.errors import Sm121Error
from sm121.gateway import upstream as up
from sm121.gateway.capture import CaptureRecord
from sm121.gateway.metrics import GatewayMetrics
from sm121.gateway.observe import Observed, ResponseObserver
from sm121.gateway.relay import (
    Head,
    RelayProtocol,
    UpstreamAbandoned,
    UpstreamClosed,
    UpstreamPool,
    client_buffer_full,
)
from sm121.gateway.replicas import Replica, alone
from sm121.gateway.replies import SSE_CONTENT_TYPE, error_reply
from sm121.protocols.routes import CHAT, Protocol

log = logging.getLogger("sm121.gateway")
# While the engine is down (a supervised restart takes about a boot), clients retry after this.
RETRY_AFTER_S = "5"
# The pause before a failed connect's one retry: past a scheduling hiccup, short beside a turn.
CONNECT_RETRY_S = 0.2


class _ConnectFailed(Sm121Error):
    """No connection to the upstream, even on the retry; nothing of the request was sent."""

    def __init__(self, cause: OSError | TimeoutError, attempts: int) -> None:
        super().__init__(str(cause) or type(cause).__name__)
        self.cause, self.attempts = cause, attempts

    @property
    def refused(self) -> bool:
        return isinstance(self.cause, ConnectionRefusedError)


@dataclass(frozen=True)
class Forwarding:
    """What forwarding reads of the gateway, and nothing more: the metrics it counts in, how
    upstream requests are authorised (the engine's key; the client's Authorization kept
    only when the gateway checks no keys of its own), the connect timeout its 503 names, and
    the replicas (to tell whether a suspected one is the last in the rotation)."""

    metrics: GatewayMetrics
    upstream_api_key: str | None
    keep_authorization: bool
    connect_timeout_s: float
    replicas: Callable[[], Iterable[Replica]]


@dataclass
class Exchange:
    """One proxied request, as the forwarder needs it."""

    protocol: Protocol | None  # its route's, handed over by the route table; None: a plain route
    path: str  # upstream path with its query string
    body: bytes | None
    started: float  # perf_counter at the request's arrival
    extra_headers: dict[str, str] = field(default_factory=dict)
    on_first_byte: Callable[[], None] = lambda: None
    capture: CaptureRecord | None = None
    outcome: str = "ok"
    usage: tuple[int | None, int | None] = (None, None)  # prompt, completion: as reported


async def forward(fw: Forwarding, replica: Replica, request: web.Request, ex: Exchange
                  ) -> web.StreamResponse:
    headers = up.request_headers(request.headers, fw.upstream_api_key,
                                 keep_authorization=fw.keep_authorization)
    # A HEAD never counts for or against the replica: any client may send them at will,
    # and each one's answer says nothing of the engine that /health does not.
    health = request.method != "HEAD"
    try:
        proto, head = await _send(replica.pool, request.method, ex.path, headers.items(),
                                  ex.body, lambda: _count_retry(fw))
    except _ConnectFailed as exc:
        if health and exc.refused:
            replica.failed("refused")  # proof: nothing listens on its port
        elif health:
            replica.suspected("unreachable", last=alone(replica, fw.replicas()))
        return _unreachable(fw, replica, ex, _connect_reason(exc, fw))
    except (OSError, TimeoutError, UpstreamClosed) as exc:
        if health:  # the request was sent and the connection closed without an answer
            replica.failed("unreachable")
        return _unreachable(fw, replica, ex, f"the connection closed before an answer "
                            f"({str(exc) or type(exc).__name__}); it may be stopping")
    except ValueError as exc:  # a line break in the request line or a header: not sent
        ex.outcome = "bad_request"
        return error_reply(400, str(exc), "invalid_request_error", headers=ex.extra_headers)
    except asyncio.CancelledError:
        _client_gone(fw, ex)  # while the engine was still in prefill
        raise
    try:
        response = await _relay(fw, request, proto, head, ex)
        if health and ex.outcome == "upstream_died":
            replica.failed("died")
        elif health and ex.outcome != "client_gone":
            replica.record(head.status < 500)
        return response
    except asyncio.CancelledError:
        _client_gone(fw, ex)
        raise
    finally:
        # Closing (not reusing) an unfinished response drops the connection: the engine sees
        # the disconnect and aborts the request.
        replica.pool.release(proto)


async def _send(pool: UpstreamPool, method: str, path: str,
                headers: Iterable[tuple[str, str]], body: bytes | None,
                on_connect_retry: Callable[[], None]) -> tuple[RelayProtocol, Head]:
    """Send the request and wait for the response head. A kept-alive connection the server
    closed just before the request, without a byte of answer, is retried once on a new one.
    On every way out but the head's arrival the connection goes back to the pool (which
    closes an unfinished one, so the engine aborts); after it, the caller releases it."""
    headers = list(headers)
    for attempt in (0, 1):
        proto, reused = await _connect(pool, on_connect_retry)
        reads = proto.reads
        try:
            proto.send(method, pool.prefix + path, pool.host, headers, body)
            return proto, await proto.head
        except BaseException as exc:  # closed, abandoned, a line break refused, cancelled
            pool.release(proto)  # unfinished: closed, so the engine aborts
            # Only a kept-alive connection closed without a byte of answer is asked again:
            # an abandoned upstream is not, and broken framing means the request reached it.
            if (not isinstance(exc, UpstreamClosed) or isinstance(exc, UpstreamAbandoned)
                    or not reused or attempt or proto.reads != reads):
                raise
    raise AssertionError("unreachable")


async def _connect(pool: UpstreamPool, on_retry: Callable[[], None]
                   ) -> tuple[RelayProtocol, bool]:
    """A connection (see the module's docstring for the one retry), or _ConnectFailed."""
    try:
        return await pool.acquire()
    except ConnectionRefusedError as exc:
        raise _ConnectFailed(exc, 1) from exc
    except (OSError, TimeoutError) as exc:
        log.info("connect to %s failed (%r); trying once more in %g s", pool.host, exc,
                 CONNECT_RETRY_S)
    on_retry()
    await asyncio.sleep(CONNECT_RETRY_S)
    try:
        return await pool.acquire()
    except (OSError, TimeoutError) as exc:
        raise _ConnectFailed(exc, 2) from exc


def _count_retry(fw: Forwarding) -> None:
    fw.metrics.upstream_errors.labels("connect_retried").inc()  # looked up only when it happens


def _connect_reason(exc: _ConnectFailed, fw: Forwarding) -> str:
    if exc.refused:
        return ("it refused the connection: nothing listens on its port, so the engine is "
                "stopped, crashed or still starting")
    tries = "once" if exc.attempts == 1 else f"{exc.attempts} times"
    if isinstance(exc.cause, TimeoutError):
        return (f"no connection within {fw.connect_timeout_s:g} s, tried "
                f"{tries}; it may be overloaded or its host unreachable")
    return f"the connect failed ({exc}), tried {tries}"


def _client_gone(fw: Forwarding, ex: Exchange) -> None:
    if ex.outcome != "client_gone":
        ex.outcome = "client_gone"
        fw.metrics.client_disconnects.inc()


def _unreachable(fw: Forwarding, replica: Replica, ex: Exchange, reason: str) -> web.Response:
    fw.metrics.upstream_errors.labels("unreachable").inc()
    ex.outcome = "upstream_unreachable"
    return error_reply(
        503, f"the upstream engine at {replica.url} is not reachable: {reason}; check "
        "`sm121 status`", "upstream_unavailable",
        headers={**ex.extra_headers, "Retry-After": RETRY_AFTER_S})


async def _relay(fw: Forwarding, request: web.Request, proto: RelayProtocol, head: Head,
                 ex: Exchange) -> web.StreamResponse:
    response = web.StreamResponse(status=head.status, reason=head.reason,
                                  headers=up.response_headers(head.headers))
    response.headers.update(ex.extra_headers)
    if head.length is not None:
        response.content_length = head.length
    event_stream = head.headers.get("Content-Type", "").startswith(SSE_CONTENT_TYPE)
    observer = ResponseObserver(event_stream)
    if ex.capture is not None:
        ex.capture.response_head(head.status, head.headers)
    writer = await response.prepare(request)
    client = request.transport
    if writer is None or client is None:
        _client_gone(fw, ex)
        return response
    pipe = _Pipe(fw, ex, proto, client, observer, head.chunked, getattr(writer, "chunked", False),
                 fw.metrics.ttft_for(request.path))
    proto.attach(pipe.sink)
    died = await pipe.run(writer)
    if ex.outcome == "client_gone":
        return response
    if died is not None:
        await _end_after_death(fw, request, response, ex, event_stream, died)
        if not event_stream:
            return response
    await response.write_eof()
    observed = observer.finish()
    ex.usage = (observed.prompt_tokens, observed.completion_tokens)
    _count(fw, observed, ex)
    if ex.capture is not None:
        ex.capture.note(prompt_tokens=observed.prompt_tokens,
                        completion_tokens=observed.completion_tokens)
    return response


class _Pipe:
    """The body's way from the upstream socket to the client socket, chunk by chunk, inside
    the upstream's data callback. Per chunk: one write, a byte count, and a bound check."""

    def __init__(self, fw: Forwarding, ex: Exchange, proto: RelayProtocol,
                 client: asyncio.BaseTransport, observer: ResponseObserver,
                 upstream_chunked: bool, client_chunked: bool, ttft: Histogram) -> None:
        self.fw, self.ex, self.proto, self.observer = fw, ex, proto, observer
        self.ttft = ttft  # the route's TTFT histogram
        self.client: asyncio.Transport = client  # type: ignore[assignment]
        self.as_is = upstream_chunked and client_chunked  # forward the framing untouched
        self.frame = client_chunked and not self.as_is
        self.first = True
        self.paused: asyncio.Future[None] | None = None

    def sink(self, raw: bytes, payload: bytes) -> None:
        if self.first and payload:
            self.first = False
            self.ex.on_first_byte()
            self.ttft.observe(time.perf_counter() - self.ex.started)
            if self.ex.capture is not None:
                self.ex.capture.note(first_byte=time.time())
        data = raw if self.as_is else (b"%x\r\n%b\r\n" % (len(payload), payload)
                                       if self.frame and payload else payload)
        if self.client.is_closing():
            self._gone()
            return
        if data:
            self.client.write(data)
        if payload:
            self.observer.feed(payload)
            if self.ex.capture is not None:
                self.ex.capture.chunk(payload)
        if client_buffer_full(self.client) and self.proto.transport is not None:
            # A slow client: stop reading the engine until the client has drained.
            self.proto.transport.pause_reading()
            if self.paused is not None and not self.paused.done():
                self.paused.set_result(None)

    def _gone(self) -> None:
        _client_gone(self.fw, self.ex)
        if self.proto.transport is not None:
            self.proto.transport.close()  # the engine aborts the request

    async def run(self, writer: AbstractStreamWriter) -> BaseException | None:
        """Wait for the end; between, let a slow client drain. Returns the upstream's
        failure if it died mid-way."""
        loop = asyncio.get_running_loop()
        done = self.proto.done
        while not done.done():
            self.paused = loop.create_future()
            await asyncio.wait((done, self.paused), return_when=asyncio.FIRST_COMPLETED)
            if not done.done():
                try:
                    await writer.drain()
                except (ConnectionError, RuntimeError):
                    self._gone()
                if self.ex.outcome == "client_gone" or self.proto.transport is None:
                    break
                self.proto.transport.resume_reading()
        if self.ex.outcome == "client_gone" or not done.done():
            return None
        return done.exception()


async def _end_after_death(fw: Forwarding, request: web.Request, response: web.StreamResponse,
                           ex: Exchange, event_stream: bool, exc: BaseException) -> None:
    fw.metrics.upstream_errors.labels("mid_stream").inc()
    ex.outcome = "upstream_died"
    log.warning("upstream died mid-response on %s: %r", request.path, exc)
    if event_stream:
        # The protocol's own error event (with chat's, then the normal end of the stream):
        # the client's loop exits cleanly and sees why.
        protocol = ex.protocol or CHAT  # chat's event on a plain route that streams
        event = protocol.stream_error(f"the upstream engine stopped mid-stream ({exc!r})",
                                      "upstream_disconnected", 502)
        try:
            await response.write(event)
        except (ConnectionError, RuntimeError):
            ex.outcome = "client_gone"
        if ex.capture is not None:
            ex.capture.chunk(event)
        return
    # A JSON body cut short cannot be repaired: drop the connection, so the client sees an
    # incomplete response instead of a truncated one that looks whole.
    if request.transport is not None:
        request.transport.close()


def _count(fw: Forwarding, observed: Observed, ex: Exchange) -> None:
    api = ex.protocol.api.value if ex.protocol is not None else None
    if observed.prompt_tokens is not None:
        fw.metrics.prompt_tokens.inc(observed.prompt_tokens)
        if api is not None:
            fw.metrics.api_tokens.labels(api, "prompt").inc(observed.prompt_tokens)
    if observed.completion_tokens is not None:
        fw.metrics.completion_tokens.inc(observed.completion_tokens)
        if api is not None:
            fw.metrics.api_tokens.labels(api, "completion").inc(observed.completion_tokens)
    if observed.events:
        fw.metrics.stream_chunks.inc(observed.events)
    if observed.error is not None and ex.outcome == "ok":
        ex.outcome = "upstream_error"
