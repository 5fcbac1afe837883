"""What a request's prompt found cached: the one reading of the engine's per-request prefix-cache
count (usage.prompt_tokens_details.cached_tokens) that every scenario shares (the agents' turns
through agents/reused.py, trace, locality, knee, soak).

vLLM leaves usage.prompt_tokens_details out of a reply whose prompt found no cached token
(`if enable_prompt_tokens_details and num_cached_tokens`), so a request whose whole prefix was
evicted, or a session's first, records no count at all. Where some other request of the run
says its count, the engine reports them, and a request that says none cached nothing. Where
none does (vLLM without --enable-prompt-tokens-details, or any engine that sends no count), the
cached count is not measured: None, never 0. llama-server (b11434) sends the count on every
OpenAI-shaped reply, 0 included (`usage_json_oaicompat` in tools/server/server-task.cpp), so
its runs are measured. A results file keeps what the server sent (a missing count stays
None); only the figures derived from it read it this way."""

from __future__ import annotations

from collections.abc import Iterable


def counts_reported(counts: Iterable[int | None]) -> bool:
    """The engine reports prefix-cache hits per request: some request of the run (these are
    its counts, as the server sent them) says how many of its prompt's tokens were cached."""
    return any(c is not None for c in counts)


def counted_cached(cached: int | None, prompt: int | None, reported: bool) -> int | None:
    """How many of a request's prompt tokens the engine found cached: its count; else 0 where
    the engine reports counts (`reported`, counts_reported over the run) and the request has a
    prompt; else None (not known)."""
    if cached is not None:
        return cached
    return 0 if reported and prompt else None


def cached_share(cached: int | None, prompt: int | None, reported: bool) -> float | None:
    """The share of a request's prompt the engine found cached (counted_cached over its
    prompt); None: not known."""
    counted = counted_cached(cached, prompt, reported)
    return None if counted is None or not prompt else counted / prompt


def summed_cached(requests: Iterable[tuple[int | None, int | None]], reported: bool
                  ) -> int | None:
    """The cached prompt tokens of these requests, each (cached, prompt) as its usage says,
    summed by counted_cached (a request with no prompt count adds nothing); None where the
    engine reports no count (`reported` False)."""
    if not reported:
        return None
    return sum(c for cached, prompt in requests
               if (c := counted_cached(cached, prompt, reported)) is not None)
