"""The aiohttp application: routes, middlewares (errors, API keys, request counting), and
running it until interrupted."""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import signal
from collections.abc import Awaitable, Callable

from aiohttp import web

from sm121.gateway import handlers
from sm121.gateway.browser_guard import guard
from sm121.gateway.config import GatewayConfig
from sm121.gateway.handlers import GATEWAY
from sm121.gateway.http_log import http_log
from sm121.gateway.replies import Refused, error_reply, refusal_reply
from sm121.gateway.state import Gateway
from sm121.protocols.routes import COUNT_TOKENS_ROUTE, GENERATION_ROUTES, PROTOCOLS, protocol_for

log = logging.getLogger("sm121.gateway")
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
PASSTHROUGH_GET = ("/version",)
# Engine routes that generate nothing: no policy, no admission, a replica of the body's model.
# /apply-template: a chat rendered as text, where /tokenize takes only text (llama-server).
PASSTHROUGH_POST = ("/tokenize", "/detokenize", "/apply-template", COUNT_TOKENS_ROUTE)
OWN_ROUTES = ("/v1/models", "/health", "/metrics", "/sm121/locality", "/sm121/upstreams",
              "/sm121/sessions")


def build_app(config: GatewayConfig) -> web.Application:
    gateway = Gateway(config)
    # The browser guard runs before the API key check: a page must not learn which it failed.
    browser_guard = guard(config.host, config.allowed_hosts, config.allowed_origins)
    app = web.Application(client_max_size=config.max_body_bytes,
                          middlewares=[_count_requests, _errors, browser_guard, _auth])
    app[GATEWAY] = gateway
    for path, protocol in PROTOCOLS.items():  # every protocol of protocols/routes.py
        app.router.add_post(path, handlers.generation_of(protocol))
    for path in PASSTHROUGH_GET:
        app.router.add_get(path, handlers.passthrough)
    for path in PASSTHROUGH_POST:
        app.router.add_post(path, handlers.passthrough)
    app.router.add_get("/v1/models", handlers.models)
    app.router.add_get("/health", handlers.health)
    app.router.add_get("/metrics", handlers.metrics)
    app.router.add_get("/sm121/locality", handlers.locality_report)
    app.router.add_get("/sm121/upstreams", handlers.upstreams)
    app.router.add_get("/sm121/sessions", handlers.sessions_report)

    async def start(_: web.Application) -> None:
        await gateway.start()

    async def stop(_: web.Application) -> None:
        await gateway.stop()

    app.on_startup.append(start)
    app.on_cleanup.append(stop)
    return app


def _route_label(request: web.Request) -> str:
    # Only known routes become label values: a scan of random paths must not grow /metrics.
    info = request.match_info.route.resource
    return info.canonical if info is not None else "unknown"


@web.middleware
async def _count_requests(request: web.Request, handler: Handler) -> web.StreamResponse:
    response = await handler(request)
    request.app[GATEWAY].metrics.count_request(_route_label(request), response.status)
    return response


@web.middleware
async def _errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    gw = request.app[GATEWAY]
    try:
        return await handler(request)
    except Refused as refusal:
        gw.metrics.refused.labels(refusal.reason).inc()
        # Looked up here, on the refusal path only: a 401 is refused before any handler.
        return refusal_reply(protocol_for(request.path), refusal)
    except web.HTTPNotFound:
        gw.metrics.refused.labels("not_found").inc()
        return error_reply(404, f"no route {request.path} on this gateway; it serves "
                           f"{', '.join(GENERATION_ROUTES + PASSTHROUGH_GET)}, "
                           f"{', '.join(PASSTHROUGH_POST + OWN_ROUTES)}", "not_found")
    except web.HTTPMethodNotAllowed as exc:
        gw.metrics.refused.labels("method").inc()
        return error_reply(405, f"{request.method} is not allowed on {request.path} (allowed: "
                           f"{', '.join(sorted(exc.allowed_methods))})", "method_not_allowed")


@web.middleware
async def _auth(request: web.Request, handler: Handler) -> web.StreamResponse:
    keys = request.app[GATEWAY].config.api_keys
    header = request.headers.get("Authorization", "")
    if not _is_text(header):
        raise Refused(400, "the Authorization header is not valid UTF-8 text",
                      "invalid_request_error", "bad_header", param="Authorization")
    if keys and not key_matches(header, keys):
        raise Refused(401, "a valid API key is required (Authorization: Bearer KEY)",
                      "invalid_api_key", "unauthorized", headers={"WWW-Authenticate": "Bearer"})
    return await handler(request)


def _is_text(value: str) -> bool:
    """aiohttp decodes header bytes that are not UTF-8 as lone surrogates (surrogateescape);
    such a header is no key, and encoding it would raise."""
    try:
        value.encode()
    except UnicodeEncodeError:
        return False
    return True


def key_matches(header: str, keys: tuple[str, ...]) -> bool:
    """Constant time in the key's content: every configured key is compared, always."""
    scheme, _, given = header.partition(" ")
    presented = given.strip().encode() if scheme.lower() == "bearer" else b""
    matched = False
    for key in keys:
        matched |= hmac.compare_digest(presented, key.encode())
    return matched and bool(presented)


async def start_site(config: GatewayConfig) -> web.AppRunner:
    """Start listening; handler cancellation makes a client disconnect cancel its handler,
    which closes the upstream connection even while the engine is still in prefill."""
    runner = web.AppRunner(build_app(config), handler_cancellation=True, access_log=None,
                           logger=http_log)
    await runner.setup()
    site = web.TCPSite(runner, config.host, config.port, backlog=1024)
    await site.start()
    return runner


def serve_forever(config: GatewayConfig, on_ready: Callable[[], None] = lambda: None) -> None:
    """Run until SIGINT or SIGTERM, then close every connection cleanly."""
    with contextlib.suppress(ImportError):
        import uvloop

        uvloop.install()
    asyncio.run(_serve(config, on_ready))


async def _serve(config: GatewayConfig, on_ready: Callable[[], None]) -> None:
    runner = await start_site(config)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    on_ready()
    try:
        await stop.wait()
    finally:
        await runner.cleanup()
