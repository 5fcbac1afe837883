"""A locality run's summary from its samples (pure: the run records them, `bench report`
reads them again): each turn against the clean run's same turn, and what it found cached by
the one rule of bench/cached.py over the whole run (a turn that says no count, where another
turn of the run says one, found nothing: vLLM leaves the count out where it is 0, and the
field at the top leaves nothing to find; where no turn says one, reuse from usage is not
measured). And its terminal lines."""

from __future__ import annotations

from collections.abc import Sequence

from sm121.bench.cached import cached_share, counted_cached, counts_reported
from sm121.bench.scenarios.locality.models import (
    LocalityReading,
    LocalitySample,
    LocalitySummary,
    LocalityTurn,
)
from sm121.display import escape


def summarize_locality(samples: Sequence[LocalitySample]) -> LocalitySummary:
    """Per placement, in the order run, each turn's reading against the clean run's."""
    reported = counts_reported(s.cached_tokens for s in samples)
    runs: dict[str, list[LocalitySample]] = {}
    for sample in samples:
        runs.setdefault(sample.placement, []).append(sample)
    clean = runs.get("clean")
    return LocalitySummary(placements={name: [_turn(row, clean, reported) for row in turns]
                                       for name, turns in runs.items()})


def _turn(row: LocalitySample, clean: list[LocalitySample] | None, reported: bool
          ) -> LocalityTurn:
    base = clean[row.turn].ttft_s if clean and row.turn < len(clean) else None
    reading = {name: getattr(row, name) for name in LocalityReading.model_fields}
    reading["cached_tokens"] = counted_cached(row.cached_tokens, row.prompt_tokens, reported)
    # derived, never the stored share: a file written before the rule stored 0 for no count
    reading["reuse_usage"] = cached_share(row.cached_tokens, row.prompt_tokens, reported)
    ratio = row.ttft_s / base if base and row.ttft_s is not None else None
    return LocalityTurn(**reading, ratio_to_clean=ratio)


def usage_reported(summary: LocalitySummary) -> bool:
    """Some turn's cached count is known: the engine reports them (summarize_locality reads
    a turn without one as 0 where it does, so every turn with a prompt then has one)."""
    return counts_reported(t.cached_tokens for turns in summary.placements.values()
                           for t in turns)


def console(summary: LocalitySummary) -> list[str]:
    """One line per placement: TTFT by turn and against clean, reuse from usage and from the
    engine's counters; reuse from usage says "not reported" where the engine sends no count."""
    reported = usage_reported(summary)
    lines = []
    for name, turns in summary.placements.items():
        usage = ", ".join(_pct(t.reuse_usage) for t in turns) if reported else "not reported"
        lines.append(
            f"{escape(name, 40)}: TTFT {', '.join(_s(t.ttft_s) for t in turns)} s by turn "
            f"({', '.join(_x(t.ratio_to_clean) for t in turns)} of clean); reuse from usage "
            f"{usage}; from the engine's counters "
            f"{', '.join(_pct(t.reuse_metrics) for t in turns)}")
    return lines


def _s(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _x(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"
