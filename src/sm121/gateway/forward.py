"""Forward one request to the upstream and pass the response back chunk by chunk.

Each chunk is written to the client as soon as it is read, and the next one is read only
after the write returns: a slow client therefore slows the read from the upstream (TCP
backpressure) instead of growing a buffer in the gateway. When the client goes away the
upstream connection is closed, which is how vLLM learns to abort the request and free its
sequence.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import aiohttp
from aiohttp import web

from sm121.gateway import upstream as up
from sm121.gateway.capture import CaptureRecord
from sm121.gateway.observe import Observed, ResponseObserver
from sm121.gateway.replicas import Replica
from sm121.gateway.replies import SSE_CONTENT_TYPE, error_event, error_reply
from sm121.gateway.state import Gateway

log = logging.getLogger("sm121.gateway")


@dataclass
class Exchange:
    """One proxied request, as the forwarder needs it."""

    route: str
    path: str  # upstream path with its query string
    body: bytes | None
    started: float  # perf_counter at the request's arrival
    extra_headers: dict[str, str] = field(default_factory=dict)
    on_first_byte: Callable[[], None] = lambda: None
    capture: CaptureRecord | None = None
    outcome: str = "ok"


async def forward(gw: Gateway, replica: Replica, request: web.Request, ex: Exchange
                  ) -> web.StreamResponse:
    headers = up.request_headers(request.headers, gw.config.upstream_api_key,
                                 keep_authorization=not gw.config.api_keys)
    url = replica.url + ex.path
    try:
        upstream = await gw.session.request(request.method, url, data=ex.body, headers=headers)
    except (aiohttp.ClientError, TimeoutError) as exc:
        replica.failed("unreachable")
        return _unreachable(gw, replica, ex, exc)
    except asyncio.CancelledError:
        _client_gone(gw, ex)  # while the engine was still in prefill
        raise
    try:
        response = await _relay(gw, request, upstream, ex)
        if ex.outcome == "upstream_died":
            replica.failed("died")
        elif ex.outcome != "client_gone":
            replica.record(upstream.status < 500)
        return response
    except asyncio.CancelledError:
        _client_gone(gw, ex)
        raise
    finally:
        # Closing (not releasing) an unfinished response drops the connection: the engine sees
        # the disconnect and aborts the request.
        if upstream.content.is_eof():
            upstream.release()
        else:
            upstream.close()


def _client_gone(gw: Gateway, ex: Exchange) -> None:
    ex.outcome = "client_gone"
    gw.metrics.client_disconnects.inc()


def _unreachable(gw: Gateway, replica: Replica, ex: Exchange, exc: BaseException
                 ) -> web.Response:
    gw.metrics.upstream_errors.labels("unreachable").inc()
    ex.outcome = "upstream_unreachable"
    reason = str(exc) or type(exc).__name__
    return error_reply(
        503, f"the upstream engine at {replica.url} is not reachable ({reason}); "
        "it may be starting, stopped or overloaded: check `sm121 status`",
        "upstream_unavailable", headers=ex.extra_headers)


async def _relay(gw: Gateway, request: web.Request, upstream: aiohttp.ClientResponse,
                 ex: Exchange) -> web.StreamResponse:
    response = web.StreamResponse(status=upstream.status, reason=upstream.reason,
                                  headers=up.response_headers(upstream.headers))
    response.headers.update(ex.extra_headers)
    if upstream.content_length is not None:
        response.content_length = upstream.content_length
    event_stream = upstream.headers.get("Content-Type", "").startswith(SSE_CONTENT_TYPE)
    observer = ResponseObserver(event_stream)
    if ex.capture is not None:
        ex.capture.response_head(upstream.status, upstream.headers)
    await response.prepare(request)
    died = await _pump(gw, upstream, response, ex, observer)
    if ex.outcome == "client_gone":
        return response
    if died is not None:
        await _end_after_death(gw, request, response, ex, event_stream, died)
        if not event_stream:
            return response
    await response.write_eof()
    _count(gw, observer.finish(), ex)
    return response


async def _pump(gw: Gateway, upstream: aiohttp.ClientResponse, response: web.StreamResponse,
                ex: Exchange, observer: ResponseObserver) -> BaseException | None:
    """Copy chunks until the end. Returns the upstream's failure, if it died mid-way."""
    first = True
    while True:
        try:
            chunk = await upstream.content.readany()
        except (aiohttp.ClientError, TimeoutError) as exc:
            return exc
        if not chunk:
            return None
        if first:
            first = False
            ex.on_first_byte()
            gw.metrics.ttft.labels(ex.route).observe(time.perf_counter() - ex.started)
        try:
            await response.write(chunk)
        except (ConnectionError, RuntimeError):  # the client went away (reset, closed writer)
            _client_gone(gw, ex)
            return None
        observer.feed(chunk)
        if ex.capture is not None:
            ex.capture.chunk(chunk)


async def _end_after_death(gw: Gateway, request: web.Request, response: web.StreamResponse,
                           ex: Exchange, event_stream: bool, exc: BaseException) -> None:
    gw.metrics.upstream_errors.labels("mid_stream").inc()
    ex.outcome = "upstream_died"
    log.warning("upstream died mid-response on %s: %r", ex.route, exc)
    if event_stream:
        # An error event, then the normal end of an OpenAI stream: the client's loop exits
        # cleanly and sees why.
        event = error_event(f"the upstream engine stopped mid-stream ({exc!r})",
                            "upstream_disconnected")
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


def _count(gw: Gateway, observed: Observed, ex: Exchange) -> None:
    if observed.prompt_tokens is not None:
        gw.metrics.tokens.labels("prompt").inc(observed.prompt_tokens)
    if observed.completion_tokens is not None:
        gw.metrics.tokens.labels("completion").inc(observed.completion_tokens)
    if observed.events:
        gw.metrics.stream_chunks.inc(observed.events)
    if observed.error is not None and ex.outcome == "ok":
        ex.outcome = "upstream_error"
