"""What a turn reused: bench/cached.py's reading of the engine's per-request prefix-cache count,
over an agents run's turns, as the run's summary, its report and its verdict share it (imports
only the records' models and that rule).

A turn that says no count cached nothing where some other turn of the run says one (vLLM
leaves the count out where it is 0), and is not measured (None, never 0) where none does. A
results file keeps what the server sent (`cached_tokens` None stays None); only the figures
derived from it read it this way."""

from __future__ import annotations

from collections.abc import Iterable

from sm121.bench.cached import cached_share, counted_cached, counts_reported
from sm121.bench.scenarios.agents.models import TurnSample


def reports_cached(turns: Iterable[TurnSample]) -> bool:
    """The engine reports prefix-cache hits per request: some turn of the run says how many of
    its prompt's tokens were cached (cached.counts_reported over the turns)."""
    return counts_reported(t.cached_tokens for t in turns)


def turn_cached(t: TurnSample, reported: bool) -> int | None:
    """A turn's cached prompt tokens (`reported`: reports_cached of its run's turns)."""
    return counted_cached(t.cached_tokens, t.prompt_tokens, reported)


def turn_reused(t: TurnSample, reported: bool) -> float | None:
    """The share of a turn's prompt it found cached: its recorded `reuse`, else turn_cached
    over its prompt (cached.cached_share: a turn that reused nothing counts, at 0); None: not
    known."""
    if t.reuse is not None:
        return t.reuse
    return cached_share(t.cached_tokens, t.prompt_tokens, reported)
