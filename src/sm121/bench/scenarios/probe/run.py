"""`probe`: can this server's streams be counted token by token? It checks that every chunk
carries token ids, that their sum matches usage, and how many tokens a chunk carries, over
the client's API; then once over each API (completions, chat, chat with `tools`)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from sm121.bench.client import BenchClient
from sm121.bench.result_models import ApiCheck, ProbeReport
from sm121.errors import Sm121Error
from sm121.progress import Progress

PROBE_PROMPT = "Write a function that schedules prefill chunks and decode steps fairly."


async def probe_server(client: BenchClient, requests: int = 3, max_tokens: int = 64,
                       progress: Progress | None = None) -> ProbeReport:
    """Never raises for an unsafe server (the caller decides); only the fields it learnt
    are set, so the results file holds those alone."""
    histogram: Counter[int] = Counter()
    if not client.stream:
        return ProbeReport(safe=False, reason="not streaming (--no-stream): tokens are "
                           "counted from usage", requests=requests,
                           cache_salt=await _takes_cache_salt(client))
    for index in range(requests):
        if progress:
            progress("probe", index, requests)
        try:
            record = await client.complete(PROBE_PROMPT, max_tokens, f"probe-{index}")
        except Sm121Error as exc:
            if "no token ids" in exc.message and not client.counts_from_timings:
                # No ids of its own: count by its running count per chunk, if it keeps one.
                client.counts_from_timings = True
                return await probe_server(client, requests, max_tokens, progress)
            return ProbeReport(safe=False, reason=exc.message, requests=requests,
                               token_ids="no token ids" not in exc.message)
        histogram.update(n for n in record.chunk_tokens if n > 0)
    chunks = sum(histogram.values())
    return ProbeReport(
        safe=True, reason=None, requests=requests, token_ids=True, usage_matches=True,
        histogram={str(k): v for k, v in sorted(histogram.items())},
        tokens_per_chunk=sum(k * v for k, v in histogram.items()) / chunks if chunks else None,
        cache_salt=await _takes_cache_salt(client), apis=await _api_checks(client))


PROBE_TOOL = {"type": "function", "function": {
    "name": "read_file", "description": "Read a file of the repository.",
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}


async def _api_checks(client: BenchClient) -> dict[str, ApiCheck]:
    """One counted stream per API: {"completions"|"chat"|"chat_tools": {ok, reason}}. A
    server may serve chat but refuse `tools` (vLLM without a tool-call parser)."""
    checks: dict[str, ApiCheck] = {}
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


async def _check(request: Any) -> ApiCheck:
    try:
        await request
    except Sm121Error as exc:
        return ApiCheck(ok=False, reason=exc.message[:300])
    return ApiCheck(ok=True, reason=None)


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
