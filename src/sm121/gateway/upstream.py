"""The upstream engine as the gateway sees it: one pooled client session, the headers that
cross the proxy, and facts asked of the engine (max-model-len, KV block size) through the
one engine client."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp
from multidict import CIMultiDict

from sm121.engines.client import EngineClient, block_size, kv_pool, max_model_len
from sm121.errors import Sm121Error

log = logging.getLogger("sm121.gateway")

# Hop-by-hop headers (RFC 9110 7.6.1) and the ones the proxy recomputes itself; the headers
# a `Connection` header names are hop-by-hop too (see _connection_named).
_HOP = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te",
                  "trailer", "transfer-encoding", "upgrade", "host", "content-length",
                  "proxy-connection"})
# Credentials: the Bearer header, and the X-Api-Key header Anthropic clients send theirs in.
_CREDENTIALS = ("authorization", "x-api-key")
_REQUEST_DROP = _HOP | {"accept-encoding", *_CREDENTIALS}
# Content-Encoding passes with the bytes it describes: the gateway never decompresses.
_RESPONSE_DROP = _HOP | {"server", "date"}


def new_session(connect_timeout_s: float) -> aiohttp.ClientSession:
    # No total timeout: a 1M-token prefill legitimately takes a quarter of an hour.
    timeout = aiohttp.ClientTimeout(total=None, connect=connect_timeout_s)
    connector = aiohttp.TCPConnector(limit=0, keepalive_timeout=30)
    return aiohttp.ClientSession(timeout=timeout, connector=connector, auto_decompress=False)


def request_headers(incoming: Mapping[str, str], upstream_key: str | None,
                    keep_authorization: bool) -> CIMultiDict[str]:
    """Client headers for the upstream. The client's credentials (Authorization, X-Api-Key)
    pass only when the gateway has no keys of its own (then they may be meant for the
    upstream); a gateway key never does, in either header."""
    drop = _REQUEST_DROP | _connection_named(incoming)
    headers = CIMultiDict((k, v) for k, v in incoming.items() if k.lower() not in drop)
    # The gateway reads what it relays (usage, errors, captures): without this aiohttp asks
    # for gzip on its own, and compressed bytes would reach the client.
    headers["Accept-Encoding"] = "identity"
    if upstream_key:
        headers["Authorization"] = f"Bearer {upstream_key}"
    elif keep_authorization and "authorization" in incoming:
        headers["Authorization"] = incoming["authorization"]
    if keep_authorization and "x-api-key" in incoming:
        headers["X-Api-Key"] = incoming["x-api-key"]
    return headers


def response_headers(incoming: Mapping[str, str]) -> CIMultiDict[str]:
    drop = _RESPONSE_DROP | _connection_named(incoming)
    return CIMultiDict((k, v) for k, v in incoming.items() if k.lower() not in drop)


def _connection_named(headers: Mapping[str, str]) -> frozenset[str]:
    """Headers a `Connection` header names are meant for this hop only (RFC 9110 7.6.1)."""
    values = (v for k, v in headers.items() if k.lower() == "connection")
    return frozenset(name.strip().lower() for value in values for name in value.split(",")
                     if name.strip())


@dataclass(frozen=True)
class UpstreamFacts:
    max_model_len: int | None = None
    block_size: int | None = None
    pool_blocks: int | None = None  # the KV pool in blocks, where the engine reports it
    models: tuple[dict[str, Any], ...] = ()  # its /v1/models entries (id, max_model_len ...)


async def discover(session: aiohttp.ClientSession, base_url: str,
                   headers: Mapping[str, str]) -> UpstreamFacts:
    """Best effort: an engine that does not say (or does not answer yet) leaves it unknown."""
    engine = EngineClient(session, base_url, headers)
    try:
        listed = (await engine.models()).get("data")
    except (Sm121Error, aiohttp.ClientError, TimeoutError, ValueError, AttributeError) as exc:
        log.info("could not read /v1/models from %s: %r", base_url, exc)
        return UpstreamFacts()
    models = tuple(m for m in listed or [] if isinstance(m, dict)
                   and isinstance(m.get("id"), str))
    block = blocks = None
    try:
        text = await engine.metrics_text()
        block = block_size(text) if text else None
        pool = kv_pool(text) if text else None
        blocks = pool[0] if pool else None
    except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
        log.info("could not read the block size from %s: %r", base_url, exc)
    return UpstreamFacts(max_model_len({"data": list(models)}), block, blocks, models)
