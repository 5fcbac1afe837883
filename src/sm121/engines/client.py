"""The one async engine client: what a server says about itself (/v1/models, /metrics,
/tokenize, /health, /version), and the one rule each fact is read by. Its sync twin, for
callers without an event loop, is client_sync.py; both raise EngineError (engine_error.py).

The gateway (best effort, while an upstream boots) and the bench (strict: a measurement needs
the facts) both ask through it, so max_model_len and block_size mean the same to both. (The
gateway's relay of client requests is not this client: relay.py frames those bytes.)"""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping
from typing import Any

import aiohttp

from sm121.engines.api_key import unauthorized
from sm121.engines.engine_error import EngineError
from sm121.engines.model_card import card_context
from sm121.engines.prometheus import metric_labels
from sm121.engines.registry import metric_names


class Health(enum.Enum):
    """An engine's /health, as EngineClient.health reads it."""

    OK = "ok"  # 200
    SICK = "sick"  # an answer, not 200: the server says it is not well
    REFUSED = "refused"  # the connect was refused: nothing listens on the port
    SILENT = "silent"  # no answer in time, or the connection dropped before one


class EngineClient:
    """Requests over a session the caller owns (the gateway's pool, the bench's client)."""

    def __init__(self, session: aiohttp.ClientSession, base_url: str,
                 headers: Mapping[str, str] | None = None) -> None:
        self.session, self.base_url = session, base_url.rstrip("/")
        self.headers = dict(headers or {})

    async def models(self) -> dict[str, Any]:
        """/v1/models; an answer other than 200 is an EngineError naming status and body."""
        async with self.session.get(f"{self.base_url}/v1/models", headers=self.headers) as resp:
            await raise_for_status(resp, "/v1/models")
            data: dict[str, Any] = await resp.json()
            return data

    async def tokenize(self, body: Mapping[str, Any],
                       timeout_s: float | None = None) -> dict[str, Any]:
        """/tokenize; an answer other than 200, or one without a JSON object, is an
        EngineError (no answer at all is aiohttp's error, as for every method here).

        A server whose /tokenize takes only text (llama-server reads `content` and answers an
        empty list for anything else) gets the text: a completions prompt as it is, a chat
        rendered by its own /apply-template first (the tokens its chat endpoint will see).
        Its answer gets the `count` vLLM's carries."""
        data = await self._post_json("/tokenize", body, timeout_s)
        if data.get("tokens") == [] and "content" not in body:
            text, special = body.get("prompt"), bool(body.get("add_special_tokens", True))
            chat = body.get("messages")
            if not isinstance(text, str) and isinstance(chat, list) and chat:
                template = {k: body[k] for k in ("messages", "tools", "chat_template_kwargs")
                            if k in body}
                text = (await self._post_json("/apply-template", template, timeout_s)
                        ).get("prompt")
            if isinstance(text, str) and text:
                data = await self._post_json("/tokenize", {"content": text,
                                                           "add_special": special}, timeout_s)
        if "count" not in data and isinstance(data.get("tokens"), list):
            data["count"] = len(data["tokens"])
        return data

    async def _post_json(self, path: str, body: Mapping[str, Any],
                         timeout_s: float | None) -> dict[str, Any]:
        # No timeout_s: the session's own timeout (aiohttp reads timeout=None as "none").
        extra: dict[str, Any] = {"timeout": aiohttp.ClientTimeout(total=timeout_s)} \
            if timeout_s else {}
        async with self.session.post(f"{self.base_url}{path}", json=dict(body),
                                     headers=self.headers, **extra) as resp:
            await raise_for_status(resp, path)
            data = await resp.json()
        if not isinstance(data, dict):
            raise EngineError(f"{path} at {self.base_url} returned no JSON object",
                              status=200)
        return data

    async def metrics_text(self, timeout_s: float | None = None) -> str | None:
        """/metrics, or None where the server (or a proxy in front) does not serve it;
        `timeout_s` bounds the whole request (None: the session's own timeout)."""
        return await self._optional_text("/metrics", timeout_s)

    async def version(self) -> str | None:
        """/version as the server says it (vLLM: JSON text); a server without it
        (llama-server) gives its build as /props' `build_info` (e.g. "b11434-b11434")."""
        text = await self._optional_text("/version")
        if text:
            return text.strip()
        props = await self._optional_text("/props")
        try:
            build = json.loads(props).get("build_info") if props else None
        except (ValueError, AttributeError):
            return None
        return build if isinstance(build, str) and build else None

    async def healthy(self, timeout_s: float) -> bool:
        """/health answers 200 (an engine's, while it runs); a server without the route
        (404) is asked for /v1/models instead. No answer in time is not healthy."""
        return await self.health(timeout_s) is Health.OK

    async def health(self, timeout_s: float) -> Health:
        """healthy()'s verdict with its cause: a refused connect (nothing listens on the
        port) is told apart from no answer in time, which a stalled caller sees too."""
        timeout = aiohttp.ClientTimeout(total=timeout_s)
        try:
            for path in ("/health", "/v1/models"):
                async with self.session.get(f"{self.base_url}{path}", headers=self.headers,
                                            timeout=timeout) as resp:
                    await resp.read()
                    if resp.status != 404:
                        return Health.OK if resp.status == 200 else Health.SICK
        except aiohttp.ClientConnectorError as exc:
            refused = isinstance(exc.os_error, ConnectionRefusedError)
            return Health.REFUSED if refused else Health.SILENT
        except (aiohttp.ClientError, TimeoutError):
            return Health.SILENT
        return Health.SICK

    async def _optional_text(self, path: str, timeout_s: float | None = None) -> str | None:
        extra: dict[str, Any] = {"timeout": aiohttp.ClientTimeout(total=timeout_s)} \
            if timeout_s else {}
        async with self.session.get(f"{self.base_url}{path}", headers=self.headers,
                                    **extra) as resp:
            return await resp.text() if resp.status == 200 else None


def max_model_len(models: Mapping[str, Any], model: str | None = None) -> int | None:
    """The context length of the served model `model`; without a name, the smallest of all
    served models (what every request through one endpoint can rely on)."""
    entries = [m for m in models.get("data") or [] if isinstance(m, dict)]
    if model is not None:
        entries = [m for m in entries if m.get("id") == model]
    known = [n for m in entries if (n := card_context(m)) is not None]
    return min(known) if known else None


def cache_config(metrics_text: str) -> dict[str, str]:
    """The labels of the engine's cache-config info gauge (block size, KV size, GMU, ...),
    by each registered engine's name for it (the adapter's MetricNames.cache_config)."""
    for name in metric_names().cache_config:
        if labels := metric_labels(metrics_text, name):
            return labels
    return {}


def block_size(metrics_text: str) -> int | None:
    return block_size_of(cache_config(metrics_text))


def kv_pool(metrics_text: str) -> tuple[int, int] | None:
    """The running engine's KV pool as (blocks, block size), from its cache-config info
    gauge (vLLM: num_gpu_blocks x block_size); None when the engine does not say. The one
    reading of the pool: the capacity model and the gateway's session admission use it."""
    return kv_pool_of(cache_config(metrics_text))


def kv_pool_of(labels: Mapping[str, Any]) -> tuple[int, int] | None:
    """kv_pool from cache-config labels already read (a results file keeps them). vLLM 0.21.0
    gave num_gpu_blocks on the H100 sitting (docs/results/gpu-h100/capacity); the 2026-12-01
    H200 results files kept four labels and no block count."""
    blocks, size = str(labels.get("num_gpu_blocks", "")), str(labels.get("block_size", ""))
    tokens = str(labels.get("kv_cache_size_tokens", ""))
    if not size.isdigit() or int(size) <= 0:
        return None
    if blocks.isdigit():
        count = int(blocks)
    elif tokens.isdigit():
        count = int(tokens) // int(size)
    else:
        return None
    return (count, int(size)) if count > 0 else None  # no blocks is no pool


def block_size_of(labels: Mapping[str, Any]) -> int | None:
    value = str(labels.get("block_size", ""))
    return int(value) if value.isdigit() else None


async def raise_for_status(response: aiohttp.ClientResponse, label: str) -> None:
    """An answer other than 200 as an EngineError naming the status and the body; a 401/403
    says at once that the key is missing or wrong (waiting or retrying cannot fix it)."""
    if response.status == 200:
        return
    if response.status in (401, 403):
        raise unauthorized(str(response.url), response.status)
    detail = (await response.text())[:400]
    raise EngineError(f"{label}: HTTP {response.status} from {response.url}: {detail}",
                      status=response.status)
