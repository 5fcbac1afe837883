"""What a turn reused: the one reading of the engine's per-request prefix-cache count that the
run's summary, its report and its verdict share (imports only the records' models).

vLLM leaves usage.prompt_tokens_details out of a reply whose prompt found no cached token
(`if enable_prompt_tokens_details and num_cached_tokens`), so a turn whose whole prefix was
evicted, or a session's first turn, records no count at all. Where some other request of the
run says its count, the engine reports them, and a request that says none cached nothing.
Where none does (llama-server, vLLM without --enable-prompt-tokens-details), the reuse is not
measured: None, never 0. A results file keeps what the server sent (`cached_tokens` None stays
None); only the figures derived from it read it this way."""

from __future__ import annotations

from collections.abc import Iterable

from sm121.bench.scenarios.agents.models import TurnSample


def reports_cached(turns: Iterable[TurnSample]) -> bool:
    """The engine reports prefix-cache hits per request: some turn of the run says how many of
    its prompt's tokens were cached."""
    return any(t.cached_tokens is not None for t in turns)


def counted_cached(cached: int | None, prompt: int | None, reported: bool) -> int | None:
    """How many of a request's prompt tokens the engine found cached: its count; else 0 where
    the engine reports counts (`reported`) and the request has a prompt; else None (not
    known)."""
    if cached is not None:
        return cached
    return 0 if reported and prompt else None


def turn_cached(t: TurnSample, reported: bool) -> int | None:
    """A turn's cached prompt tokens (`reported`: reports_cached of its run's turns)."""
    return counted_cached(t.cached_tokens, t.prompt_tokens, reported)


def turn_reused(t: TurnSample, reported: bool) -> float | None:
    """The share of a turn's prompt it found cached: its recorded `reuse`, else turn_cached
    over its prompt (a turn that reused nothing counts, at 0); None: not known."""
    if t.reuse is not None:
        return t.reuse
    cached = turn_cached(t, reported)
    return None if cached is None or not t.prompt_tokens else cached / t.prompt_tokens
