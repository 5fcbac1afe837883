"""Host and Origin: what keeps a web page from using the gateway.

A page the user visits can make the browser talk to 127.0.0.1 in two ways. DNS rebinding:
the page's own name (evil.example) is re-pointed at 127.0.0.1, so the browser treats the
gateway as same-origin with the page and lets it read /sm121/upstreams, /metrics and
generations; such a request carries `Host: evil.example`. Cross-origin "simple" requests: a
POST with a CORS-safelisted content type (text/plain, a form) is sent without a preflight;
the page cannot read the answer, but the gateway would run the generation.

So, on every route (the gateway's own and the engine's alike):
- the Host must name this gateway: a loopback name or address, the address it listens on,
  any IP literal when it listens on every address (a rebinding attack always arrives under
  a name, never an address), or a name given with --allowed-host; else 421;
- a request from a browser page (an `Origin` header, or `Sec-Fetch-Site` saying cross-site)
  is refused with 403 unless --allow-origin names that origin;
- a POST whose body a browser form could send without asking (text/plain,
  application/x-www-form-urlencoded, multipart/form-data) is refused with 415: every agent
  and SDK sends application/json.
An allow-list: whatever is not named is refused. Non-browser clients (SDKs, curl, sm121's
own) send a loopback Host and no Origin, so they pass untouched.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Awaitable, Callable

from aiohttp import web
from aiohttp.typedefs import Middleware

from sm121.gateway.replies import Refused

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})
WILDCARD_ADDRESSES = frozenset({"0.0.0.0", "::", ""})
# The content types a page may POST cross-origin without a preflight (the Fetch standard's
# CORS-safelisted request header values for Content-Type).
FORM_TYPES = frozenset({"text/plain", "application/x-www-form-urlencoded",
                        "multipart/form-data"})
CROSS_SITE = frozenset({"cross-site", "same-site"})


def host_name(header: str) -> str | None:
    """The name of a Host header without its port, lower case; None when it is not one."""
    value = header.strip().lower()
    if value.startswith("["):  # [::1]:8100
        inside, sep, rest = value[1:].partition("]")
        if not sep or (rest and not (rest.startswith(":") and rest[1:].isdigit())):
            return None
        return inside
    name, sep, port = value.rpartition(":")
    if sep and port.isdigit() and ":" not in name:
        value = name
    return value.rstrip(".") or None


def _is_address(name: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(name)
    except ValueError:
        return None


def host_allowed(header: str | None, listen: str, allowed: tuple[str, ...]) -> bool:
    """Whether a request's Host header names this gateway (see the module's docstring)."""
    name = host_name(header or "")
    if name is None:
        return False
    address = _is_address(name)
    if name in LOOPBACK_NAMES or (address is not None and address.is_loopback):
        return True
    listen = listen.strip("[]").lower()
    if name == listen or name in {a.strip("[]").lower().rstrip(".") for a in allowed}:
        return True
    return address is not None and listen in WILDCARD_ADDRESSES


def origin_allowed(origin: str, allowed: tuple[str, ...]) -> bool:
    return origin.rstrip("/").lower() in {a.rstrip("/").lower() for a in allowed}


def guard(listen: str, allowed_hosts: tuple[str, ...], allowed_origins: tuple[str, ...]
          ) -> Middleware:
    """The aiohttp middleware for a gateway listening on `listen`."""

    @web.middleware
    async def browser_guard(request: web.Request, handler: Handler) -> web.StreamResponse:
        check(request, listen, allowed_hosts, allowed_origins)
        return await handler(request)

    return browser_guard


def check(request: web.Request, listen: str, allowed_hosts: tuple[str, ...],
          allowed_origins: tuple[str, ...]) -> None:
    """Raise Refused when the request is not for this gateway or comes from a web page."""
    headers = request.headers
    host = headers.getall("Host", [])
    if len(host) != 1 or not host_allowed(host[0], listen, allowed_hosts):
        raise Refused(421, "this gateway answers only requests addressed to it (a loopback "
                      "name or address, or a name given with --allowed-host); the Host "
                      "header names another server", "invalid_request_error", "host",
                      code="misdirected_request")
    origins = headers.getall("Origin", [])
    if origins and not (len(origins) == 1 and origin_allowed(origins[0], allowed_origins)):
        raise Refused(403, "requests from web pages are refused (the request carries an "
                      "Origin header); allow a page's origin with --allow-origin",
                      "invalid_request_error", "origin", code="origin_not_allowed")
    if headers.get("Sec-Fetch-Site", "").lower() in CROSS_SITE and not origins:
        raise Refused(403, "cross-site requests from a browser are refused",
                      "invalid_request_error", "origin", code="origin_not_allowed")
    if request.method == "POST" and request.content_type in FORM_TYPES and not origins:
        raise Refused(415, f"a {request.content_type} body is what a web page can send "
                      "without asking; send the request as application/json",
                      "invalid_request_error", "content_type", code="unsupported_media_type")
