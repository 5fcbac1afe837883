"""Route handlers: generation routes (policy, context check, admission, locality, forward),
plain pass-through routes, and the gateway's own /metrics and locality report."""

from __future__ import annotations

import json
import secrets
import time
from typing import Any

from aiohttp import web

from sm121.gateway.forward import Exchange, forward
from sm121.gateway.limits import MAX_JSON_DEPTH, deeper_than
from sm121.gateway.metrics import CONTENT_TYPE
from sm121.gateway.policy import PolicyViolation, apply_policy
from sm121.gateway.prompt_size import (
    PromptSize,
    context_problem,
    estimate,
    needs_exact,
    requested_output,
)
from sm121.gateway.replies import error_reply
from sm121.gateway.sessions import session_id
from sm121.gateway.state import Gateway
from sm121.locality.tokenize import TokenizeError, tokenize

GATEWAY: web.AppKey[Gateway] = web.AppKey("gateway", Gateway)
STRIPPED_HEADER = "X-Sm121-Stripped-Params"
REQUEST_ID_HEADER = "X-Sm121-Request-Id"
QUEUE_WAIT_HEADER = "X-Sm121-Queue-Wait"  # seconds the request waited for admission
GENERATION_ROUTES = ("/v1/chat/completions", "/v1/completions", "/v1/responses",
                     "/v1/messages")  # Anthropic-style, where the engine offers it
LOCALITY_ROUTES = ("/v1/chat/completions", "/v1/completions")


class Refused(Exception):
    """A request answered by the gateway itself, before the upstream saw it."""

    def __init__(self, response: web.Response, reason: str) -> None:
        super().__init__(reason)
        self.response = response
        self.reason = reason


async def generation(request: web.Request) -> web.StreamResponse:
    gw = request.app[GATEWAY]
    started = time.perf_counter()
    raw = await read_body(request, gw)
    body = parse_object(raw)
    stripped = _apply_policy(gw, body)
    session = session_id(request.headers, body, gw.config.session_header)
    size, tokens = await _measure(gw, body, len(raw))
    queued = time.perf_counter()
    ticket = await gw.admission.admit(session, long=size.tokens >= gw.config.long_prompt_tokens)
    waited = time.perf_counter() - queued
    ex: Exchange | None = None
    try:  # one try from admission to the end of the response: nothing may keep the slot
        ex = _exchange(request, gw, started, json.dumps(body).encode() if stripped else raw)
        ex.on_first_byte = ticket.prefill_done
        ex.extra_headers[QUEUE_WAIT_HEADER] = f"{waited:.6f}"
        if ex.capture is not None:  # what `bench replay` needs: the session and the arrival
            ex.capture.note(session=session, queue_wait_s=round(waited, 6),
                            arrived=time.time() - (time.perf_counter() - started))
        if stripped:
            ex.extra_headers[STRIPPED_HEADER] = ", ".join(stripped)
        if gw.config.locality.enabled and request.path in LOCALITY_ROUTES:
            gw.watch.submit(session, body, len(raw), tokens)
        return await forward(gw, request, ex)
    finally:
        ticket.release()
        _finish_capture(ex)


async def passthrough(request: web.Request) -> web.StreamResponse:
    """Routes with no policy and no admission: /v1/models, /tokenize, /detokenize, /health."""
    gw = request.app[GATEWAY]
    raw = await read_body(request, gw) if request.can_read_body else None
    ex = _exchange(request, gw, time.perf_counter(), raw)
    try:
        return await forward(gw, request, ex)
    finally:
        _finish_capture(ex)


def _finish_capture(ex: Exchange | None) -> None:
    if ex is not None and ex.capture is not None:
        ex.capture.finish(ex.outcome)  # never raises: a capture failure is only logged


async def metrics(request: web.Request) -> web.Response:
    body = request.app[GATEWAY].metrics.render()
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE})


async def locality_report(request: web.Request) -> web.Response:
    return web.json_response(request.app[GATEWAY].watch.report())


def _exchange(request: web.Request, gw: Gateway, started: float, body: bytes | None) -> Exchange:
    request_id = secrets.token_hex(8)
    ex = Exchange(route=request.path, path=request.path_qs, body=body, started=started,
                  extra_headers={REQUEST_ID_HEADER: request_id})
    if gw.capture is not None:
        ex.capture = gw.capture.start(request_id, request.method, request.path_qs,
                                      request.headers, body or b"")
    return ex


async def read_body(request: web.Request, gw: Gateway) -> bytes:
    limit = gw.config.max_body_bytes
    if request.content_length is not None and request.content_length > limit:
        raise _too_large(request.content_length, limit)
    try:
        return await request.read()
    except web.HTTPRequestEntityTooLarge as exc:
        raise _too_large(None, limit) from exc


def _too_large(size: int | None, limit: int) -> Refused:
    told = f"{size:,} bytes" if size is not None else "more"
    return Refused(error_reply(413, f"the request body is {told}; this gateway accepts at most "
                               f"{limit:,} bytes (--max-body-mb)", "request_too_large"),
                   "too_large")


def parse_object(raw: bytes) -> dict[str, Any]:
    try:
        body = json.loads(raw)
    except ValueError as exc:
        raise Refused(error_reply(400, f"the request body is not valid JSON: {exc}",
                                  "invalid_request_error"), "malformed_json") from exc
    except RecursionError as exc:
        raise _too_deep() from exc
    if not isinstance(body, dict):
        raise Refused(error_reply(400, "the request body must be a JSON object",
                                  "invalid_request_error"), "malformed_json")
    if deeper_than(body, MAX_JSON_DEPTH):
        raise _too_deep()
    return body


def _too_deep() -> Refused:
    return Refused(error_reply(400, f"the request body nests JSON more than {MAX_JSON_DEPTH} "
                               "levels deep; no OpenAI request needs that many",
                               "invalid_request_error"), "too_deep")


def _apply_policy(gw: Gateway, body: dict[str, Any]) -> list[str]:
    try:
        outcome = apply_policy(body, gw.config.policy)
    except PolicyViolation as exc:
        gw.metrics.rejected.labels(exc.param).inc()
        raise Refused(error_reply(400, str(exc), "invalid_request_error", exc.param),
                      "policy") from exc
    for name in outcome.stripped:
        gw.metrics.stripped.labels(name).inc()
    return outcome.stripped


async def _measure(gw: Gateway, body: dict[str, Any], nbytes: int
                   ) -> tuple[PromptSize, list[int] | None]:
    """The prompt's size for the long lane and the context check: estimated from the body's
    bytes, counted exactly by the upstream only when the estimate is near a limit."""
    size, output, limit = estimate(nbytes), requested_output(body), gw.max_model_len
    tokens = None
    if needs_exact(size, output, gw.config.long_prompt_tokens, limit):
        try:
            counted = await tokenize(gw.session, gw.config.upstream, body, gw.upstream_auth())
        except TokenizeError:
            return size, None  # the engine still checks the context itself
        size, tokens = PromptSize(counted.count, exact=True), counted.tokens
        limit = counted.max_model_len or limit
        problem = context_problem(counted.count, output, limit)
        if problem is not None:
            raise Refused(error_reply(400, problem, "invalid_request_error",
                                      "max_tokens" if output is not None else "messages"),
                          "context_length")
    return size, tokens
