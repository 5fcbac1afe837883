"""Route handlers: generation routes (model -> replica, policy, context check, admission,
locality, forward; each read through its protocol's description, protocols/routes.py, found
once from the route table and carried in the Exchange), plain
pass-through routes, the union /v1/models, and the gateway's own /health, /metrics, upstreams
and locality report."""

from __future__ import annotations

import functools
import json
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from typing import Any

from aiohttp import web

from sm121.gateway.body_parse import BodyTooLarge, parse_object
from sm121.gateway.forward import Exchange, forward
from sm121.gateway.metrics import CONTENT_TYPE
from sm121.gateway.policy import PolicyViolation, apply_policy
from sm121.gateway.prompt_size import PromptSize, context_problem, estimate, needs_exact
from sm121.gateway.replicas import Replica
from sm121.gateway.replies import Refused, error_reply
from sm121.gateway.routing import Route
from sm121.gateway.session_admission import home_route
from sm121.gateway.sessions import session_id
from sm121.gateway.state import Gateway
from sm121.locality.tokenize import TokenizeError, tokenize
from sm121.protocols.routes import Protocol

GATEWAY: web.AppKey[Gateway] = web.AppKey("gateway", Gateway)
STRIPPED_HEADER = "X-Sm121-Stripped-Params"
REQUEST_ID_HEADER = "X-Sm121-Request-Id"
UPSTREAM_HEADER = "X-Sm121-Upstream"  # which replica answered: affinity is visible to a client
QUEUE_WAIT_HEADER = "X-Sm121-Queue-Wait"  # seconds the request waited for admission


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def generation_of(protocol: Protocol) -> Handler:
    """The handler of `protocol`'s route: the route table hands it its protocol once, so no
    request looks it up from its path."""
    async def handle(request: web.Request) -> web.StreamResponse:
        return await generation(request, protocol)
    return handle


async def generation(request: web.Request, protocol: Protocol) -> web.StreamResponse:
    gw = request.app[GATEWAY]
    started = time.perf_counter()
    raw = await read_body(request, gw)
    body = parse_object(raw)  # bounded: read_body refused a body of too many values
    session = session_id(request.headers, body, gw.config.session_header)
    pool = gw.router.pool(body.get("model"))  # NoRoute is a Refused: the middleware answers
    stripped, changed = _apply_policy(gw, body, pool, protocol)
    prompt = _Prompt(protocol, body, len(raw))
    # Whatever policy changed (a parameter stripped, a default supplied) is sent re-encoded;
    # otherwise the client's own bytes go, as they came.
    payload = json.dumps(body).encode() if changed else raw
    # Session admission (session_admission.py): a new session may wait here, no byte sent.
    admitted = await gw.sessions.admit(session, protocol, body, len(raw),
                                       lambda: prompt.view, pool)
    tried: list[Replica] = []
    usage: tuple[int | None, int | None] = (None, None)
    try:
        while True:
            route = home_route(admitted, tried) or gw.router.pick(pool, session, tried)
            if route is None:
                raise RuntimeError("no replica left to try")  # pick had a non-empty pool
            _count_route(route)
            ex = _exchange(request, gw, started, payload, protocol)
            ex.extra_headers[UPSTREAM_HEADER] = route.replica.name
            ex.extra_headers.update(admitted.headers())
            if stripped:
                ex.extra_headers[STRIPPED_HEADER] = ", ".join(stripped)
            response = await _generate_on(gw, route.replica, request, ex,
                                          prompt, session,
                                          watch=not tried, job=not admitted.turn)
            usage = ex.usage
            tried.append(route.replica)
            # Refused at the door (connection failed): nothing reached that engine, so
            # another replica may take the request. The failed one is ejected already.
            if ex.outcome != "upstream_unreachable" or len(tried) >= len(pool):
                return response
    finally:
        gw.sessions.finish(session, admitted, len(raw), *usage)


@dataclass(frozen=True)
class _Prompt:
    """One generation's body with what its protocol says about it."""

    protocol: Protocol
    body: dict[str, Any]  # as policy left it
    nbytes: int

    @functools.cached_property
    def view(self) -> dict[str, Any] | None:
        """The prompt as the engine's chat template sees it, or None when it has none:
        counted for the context check near a limit, compared turn by turn by the locality
        watch. Built on first use only (a walk of a whole Messages or Responses conversation),
        once for all the replicas a request is tried on."""
        return self.protocol.chat_view(self.body)


async def _generate_on(gw: Gateway, replica: Replica, request: web.Request, ex: Exchange,
                       prompt: _Prompt, session: str, watch: bool, job: bool = True
                       ) -> web.StreamResponse:
    try:
        size, tokens = await _measure(gw, replica, prompt)
    except Refused:
        _finish_capture(ex)
        raise
    queued = time.perf_counter()
    long = size.tokens >= replica.spec.long_prompt_tokens
    ticket = await replica.admission.admit(session, long=long)
    waited = time.perf_counter() - queued
    replica.started()
    # A long job outside a session's turn holds its KV against the sessions' reserve.
    end_job = gw.sessions.long_job(replica, size.tokens) if long and job else None
    try:  # one try from admission to the end of the response: nothing may keep the slot
        ex.on_first_byte = ticket.prefill_done
        ex.extra_headers[QUEUE_WAIT_HEADER] = f"{waited:.6f}"
        if ex.capture is not None:  # what `bench replay` needs: the session and the arrival
            ex.capture.note(session=session, queue_wait_s=round(waited, 6),
                            arrived=time.time() - (time.perf_counter() - ex.started),
                            api=prompt.protocol.api.value)
        if watch and gw.config.locality.enabled and prompt.view is not None:
            gw.watch.submit(session, prompt.view, prompt.nbytes, tokens)
        return await forward(gw.forwarding, replica, request, ex)
    finally:
        replica.finished()
        ticket.release()
        if end_job is not None:
            end_job()
        _finish_capture(ex)


def _count_route(route: Route) -> None:
    route.replica.count_route(route.how)
    if route.owner is not None:
        route.owner.count_spill(route.reason)


async def passthrough(request: web.Request) -> web.StreamResponse:
    """Routes with no policy and no admission: /tokenize, /detokenize, Anthropic's
    /v1/messages/count_tokens, /version, sent to a replica of the body's model (or any
    healthy one)."""
    gw = request.app[GATEWAY]
    raw = await read_body(request, gw) if request.can_read_body else None
    replica = gw.any_replica(_model_of(raw))
    ex = _exchange(request, gw, time.perf_counter(), raw, None)
    try:
        return await forward(gw.forwarding, replica, request, ex)
    finally:
        _finish_capture(ex)


def _finish_capture(ex: Exchange) -> None:
    if ex.capture is not None:
        ex.capture.finish(ex.outcome)  # never raises: a capture failure is only logged


def _model_of(raw: bytes | None) -> object:
    if not raw:
        return None
    try:
        body = parse_object(raw)  # bounded: read_body refused a body of too many values
    except Refused as refusal:
        if refusal.reason == "malformed_json":  # not JSON: the engine answers for it
            return None
        raise
    return body.get("model")


async def models(request: web.Request) -> web.StreamResponse:
    """The union of every healthy replica's /v1/models, one entry per model id."""
    gw = request.app[GATEWAY]
    replicas = list(gw.replicas.values())
    if len(replicas) == 1 and not replicas[0].discovered:
        return await passthrough(request)  # one engine: it answers, or its absence does
    if not any(r.discovered for r in replicas):
        await gw.learn_all()  # just started: ask now rather than answer an empty list
    union: dict[str, dict[str, Any]] = {}
    for replica in replicas:
        if replica.healthy:
            for card in replica.cards:
                union.setdefault(str(card["id"]), card)
    if not union:
        return error_reply(503, "no upstream is answering: "
                           + ", ".join(f"{r.name} ({'up' if r.healthy else 'ejected'})"
                                       for r in replicas), "upstream_unavailable")
    return web.json_response({"object": "list", "data": list(union.values())})


async def health(request: web.Request) -> web.Response:
    """200 while at least one replica is in the rotation; the body says which."""
    replicas = [r.summary() for r in request.app[GATEWAY].replicas.values()]
    status = 200 if any(r["healthy"] for r in replicas) else 503
    return web.json_response({"upstreams": replicas}, status=status)


async def upstreams(request: web.Request) -> web.Response:
    gw = request.app[GATEWAY]
    verdict = gw.registry_verdict
    return web.json_response({"routing": gw.config.routing.mode, "models": gw.router.models,
                              "upstreams": [r.summary() for r in gw.replicas.values()],
                              "registry": None if verdict is None else asdict(verdict)})


async def metrics(request: web.Request) -> web.Response:
    body = request.app[GATEWAY].metrics.render()
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE})


async def sessions_report(request: web.Request) -> web.Response:
    """Session admission: on or off and why, each replica's pool and budget, the active,
    waiting and idle sessions with their working sets (digest ids)."""
    gw = request.app[GATEWAY]
    return web.json_response(gw.sessions.report(list(gw.replicas.values())))


async def locality_report(request: web.Request) -> web.Response:
    return web.json_response(request.app[GATEWAY].watch.report())


def _exchange(request: web.Request, gw: Gateway, started: float, body: bytes | None,
              protocol: Protocol | None) -> Exchange:
    request_id = secrets.token_hex(8)
    # As the client encoded it: a decoded %0D%0A would end the upstream's request line.
    ex = Exchange(protocol=protocol, path=request.rel_url.raw_path_qs, body=body,
                  started=started,
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
        return await gw.bodies.read(request, limit)  # a large body is checked off the loop
    except BodyTooLarge as exc:
        raise _too_large(None, limit) from exc


def _too_large(size: int | None, limit: int) -> Refused:
    told = f"{size:,} bytes" if size is not None else "more"
    return Refused(413, f"the request body is {told}; this gateway accepts at most "
                   f"{limit:,} bytes (--max-body-mb)", "request_too_large", "too_large")


def _apply_policy(gw: Gateway, body: dict[str, Any], pool: list[Replica], protocol: Protocol
                  ) -> tuple[list[str], bool]:
    """The policy of the model's recipe (of each, should its replicas differ), applied once:
    a retry on another replica sends the same bytes. The parameters stripped, and whether
    the body changed at all."""
    stripped: list[str] = []
    changed = False
    for policy in {id(r.spec.policy): r.spec.policy for r in pool}.values():
        try:
            outcome = apply_policy(body, policy, protocol)
        except PolicyViolation as exc:
            gw.metrics.rejected.labels(exc.param).inc()
            raise Refused(400, str(exc), "invalid_request_error", "policy", exc.param) from exc
        for name in outcome.stripped:
            gw.metrics.stripped.labels(name).inc()
        stripped += outcome.stripped
        changed |= outcome.changed
    return stripped, changed


async def _measure(gw: Gateway, replica: Replica, prompt: _Prompt
                   ) -> tuple[PromptSize, list[int] | None]:
    """The prompt's size for the long lane and the context check: estimated from the body's
    bytes, counted exactly by the upstream (its /tokenize of the protocol's chat view) only
    when the estimate is near a limit. A check that cannot be made is counted, by protocol
    and reason: the engine still checks the context itself, but never silently here."""
    protocol = prompt.protocol
    size, output = estimate(prompt.nbytes), protocol.requested_output(prompt.body)
    limit = replica.max_model_len
    if not needs_exact(size, output, replica.spec.long_prompt_tokens, limit):
        return size, None
    if prompt.view is None:
        gw.metrics.exact_count_skipped.labels(protocol.api.value, "no_chat_view").inc()
        return size, None
    try:
        counted = await tokenize(gw.session, replica.url, prompt.view, gw.upstream_auth())
    except TokenizeError:
        gw.metrics.exact_count_skipped.labels(protocol.api.value, "tokenize").inc()
        return size, None
    size, tokens = PromptSize(counted.count, exact=True), counted.tokens
    limit = counted.max_model_len or limit
    field = protocol.output_field(prompt.body)
    problem = context_problem(counted.count, output, limit, field)
    if problem is not None:
        param = field if output is not None else protocol.prompt_field
        raise Refused(400, problem, "invalid_request_error", "context_length", param)
    return size, tokens
