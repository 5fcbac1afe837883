"""`probe`: can this server's streams be counted token by token? It checks that every chunk
carries token ids, that their sum matches usage, and how many tokens a chunk carries, over
the client's API; then once over each API (completions, chat, chat with `tools`)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from sm121.bench.client import BenchClient
from sm121.errors import Sm121Error
from sm121.progress import Progress

PROBE_PROMPT = "Write a function that schedules prefill chunks and decode steps fairly."


async def probe_server(client: BenchClient, requests: int = 3, max_tokens: int = 64,
                       progress: Progress | None = None) -> dict[str, Any]:
    """Returns {safe, reason, token_ids, usage_matches, histogram, tokens_per_chunk,
    cache_salt}; never raises for an unsafe server (the caller decides)."""
    histogram: Counter[int] = Counter()
    report: dict[str, Any] = {"safe": False, "reason": None, "requests": requests}
    if not client.stream:
        report["reason"] = "not streaming (--no-stream): tokens are counted from usage"
        report["cache_salt"] = await _takes_cache_salt(client)
        return report
    for index in range(requests):
        if progress:
            progress("probe", index, requests)
        try:
            record = await client.complete(PROBE_PROMPT, max_tokens, f"probe-{index}")
        except Sm121Error as exc:
            report["reason"] = exc.message
            report["token_ids"] = "no token ids" not in exc.message
            return report
        histogram.update(n for n in record.chunk_tokens if n > 0)
    chunks = sum(histogram.values())
    report.update(safe=True, token_ids=True, usage_matches=True,
                  histogram={str(k): v for k, v in sorted(histogram.items())},
                  tokens_per_chunk=sum(k * v for k, v in histogram.items()) / chunks
                  if chunks else None,
                  cache_salt=await _takes_cache_salt(client), apis=await _api_checks(client))
    return report


PROBE_TOOL = {"type": "function", "function": {
    "name": "read_file", "description": "Read a file of the repository.",
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}


async def _api_checks(client: BenchClient) -> dict[str, dict[str, Any]]:
    """One counted stream per API: {"completions"|"chat"|"chat_tools": {ok, reason}}. A
    server may serve chat but refuse `tools` (vLLM without a tool-call parser)."""
    checks: dict[str, dict[str, Any]] = {}
    saved = client.api
    try:
        for name in ("completions", "chat"):
            client.api = name
            checks[name] = await _check(client.complete(PROBE_PROMPT, 8, f"probe-{name}"))
        client.api = "chat"
        checks["chat_tools"] = await _check(client.chat(
            [{"role": "user", "content": PROBE_PROMPT}], 8, "probe-chat-tools",
            tools=[PROBE_TOOL]))
    finally:
        client.api = saved
    return checks


async def _check(request: Any) -> dict[str, Any]:
    try:
        await request
    except Sm121Error as exc:
        return {"ok": False, "reason": exc.message[:300]}
    return {"ok": True, "reason": None}


async def _takes_cache_salt(client: BenchClient) -> bool:
    """vLLM isolates prefix-cache entries by `cache_salt`; other servers may refuse it."""
    saved, client.cache_salt = client.cache_salt, True
    try:
        await client.complete("salt check", 1, "probe-cache-salt")
        return True
    except Sm121Error:
        return False
    finally:
        client.cache_salt = saved
