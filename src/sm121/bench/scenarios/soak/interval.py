"""One report interval of a soak: outcomes of the turns that finished inside it, summed."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from sm121.bench.cached import counts_reported, summed_cached
from sm121.bench.scenarios.soak.turn import TurnOutcome


@dataclass(frozen=True)
class IntervalSummary:
    """The turns of one interval, summed (the agents' part of a "soak" line, in its order)."""

    requests_ok: int
    requests_good: int
    errors: int
    error_samples: list[str]
    completion_tokens: int
    goodput_tok_s: float | None
    prompt_tokens: int
    cached_tokens: int | None  # None: no turn of the run so far said a count (not measured)
    latency_p50_s: float | None
    latency_p95_s: float | None


@dataclass
class Interval:
    slo_s: float
    outcomes: list[TurnOutcome] = field(default_factory=list)

    def add(self, outcome: TurnOutcome) -> None:
        self.outcomes.append(outcome)

    def summary(self, seconds: float, reported: bool = False) -> IntervalSummary:
        """Goodput: completion tokens of turns that succeeded within the latency SLO, per
        second of the interval. Errors keep their first messages (what went wrong). Cached
        tokens by bench/cached.py's rule over the run as far as it has gone (`reported`: an
        earlier interval's turn said a count): a turn with no count, where one did, cached
        nothing; where none did yet, not measured (None), never 0."""
        ok = [o for o in self.outcomes if o.ok]
        good = [o for o in ok if o.latency_s <= self.slo_s]
        errors = [o for o in self.outcomes if not o.ok]
        latencies = np.asarray([o.latency_s for o in ok]) if ok else None
        reported = reported or counts_reported(o.cached_tokens for o in ok)
        return IntervalSummary(
            requests_ok=len(ok),
            requests_good=len(good),
            errors=len(errors),
            error_samples=sorted({o.error or "" for o in errors})[:3],
            completion_tokens=sum(o.completion_tokens for o in ok),
            goodput_tok_s=round(sum(o.completion_tokens for o in good) / seconds, 3)
            if seconds > 0 else None,
            prompt_tokens=sum(o.prompt_tokens for o in ok),
            cached_tokens=summed_cached(((o.cached_tokens, o.prompt_tokens) for o in ok),
                                        reported),
            latency_p50_s=None if latencies is None
            else round(float(np.percentile(latencies, 50)), 3),
            latency_p95_s=None if latencies is None
            else round(float(np.percentile(latencies, 95)), 3),
        )
