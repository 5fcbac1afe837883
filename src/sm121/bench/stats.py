"""Pure metric functions: windows, clipped gaps, same-stream baselines, validity checks and
summaries of repetitions. Times are seconds on one clock; streams are (times, tokens) with a
token count per chunk."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Window:
    start: float
    end: float

    @property
    def length(self) -> float:
        return max(0.0, self.end - self.start)

    def contains(self, t: float) -> bool:
        return self.start <= t < self.end


def percentile(values: Sequence[float], q: float) -> float | None:
    return float(np.percentile(np.asarray(values, dtype=float), q)) if len(values) else None


def tokens_in(times: Sequence[float], tokens: Sequence[int], window: Window) -> int:
    """Tokens whose chunk arrived inside (start, end]."""
    return sum(n for t, n in zip(times, tokens, strict=True) if window.start < t <= window.end)


def rate(times: Sequence[float], tokens: Sequence[int], window: Window) -> float | None:
    return tokens_in(times, tokens, window) / window.length if window.length > 0 else None


def clipped_gaps(times: Sequence[float], window: Window) -> list[float]:
    """Output gaps seen inside the window: each interval between consecutive chunks, cut to
    the window. A stall that began before the window or ends after it counts only for the
    part inside (rule 5); the first and last partial intervals are included."""
    gaps = []
    for left, right in zip(times, times[1:], strict=False):
        inside = min(right, window.end) - max(left, window.start)
        if inside > 0:
            gaps.append(inside)
    return gaps


def gap_stats(gaps: Sequence[float]) -> dict[str, float | None]:
    return {"p50": percentile(gaps, 50), "p95": percentile(gaps, 95),
            "max": max(gaps) if gaps else None, "count": float(len(gaps))}


def decode_share(during: float | None, before: float | None) -> float | None:
    """Decode rate during the prefill over the rate before it, on the same stream (rule 2)."""
    if during is None or not before:
        return None
    return during / before


def outlives(times: Sequence[float], window: Window) -> bool:
    """The measured stream delivered a chunk after the window closed (rule 5): otherwise the
    decode during the window is cut short by the stream's own end, not by the prefill."""
    return bool(times) and times[-1] > window.end


def admission_valid(submitted: float, window: Window) -> bool:
    """A short request counts only if it was sent while the prefill really ran (rule 6)."""
    return window.contains(submitted)


def long_gap_threshold(baseline_gaps: Sequence[float], factor: float = 10.0,
                       floor_s: float = 0.05) -> float:
    """What counts as a stall: far beyond the stream's own undisturbed gaps."""
    p50 = percentile(baseline_gaps, 50) or 0.0
    p95 = percentile(baseline_gaps, 95) or 0.0
    return max(factor * p50, 3.0 * p95, floor_s)


def engine_start(times: Sequence[float], submitted: float, first_token: float,
                 threshold: float) -> float | None:
    """When the engine really began the prefill: the start of the first long gap in the
    ongoing stream after submission. Before that the API server was still tokenising and the
    stream decoded undisturbed. None when no stall is seen (then use the client window)."""
    for left, right in zip(times, times[1:], strict=False):
        if right <= submitted or left >= first_token:
            continue
        if right - max(left, submitted) > threshold:
            return max(left, submitted)
    return None


def summarize(values: Sequence[float | None]) -> dict[str, float | int | None]:
    """Median and spread (min, max) over repetitions; None values are dropped."""
    kept = [float(v) for v in values if v is not None]
    if not kept:
        return {"median": None, "min": None, "max": None, "n": 0}
    return {"median": float(np.median(kept)), "min": min(kept), "max": max(kept), "n": len(kept)}


def inter_token_intervals(times: Sequence[float], tokens: Sequence[int]) -> list[float]:
    """Per-token intervals: a chunk of k tokens after a gap g stands for k intervals of g/k."""
    intervals: list[float] = []
    for (left, right), n in zip(zip(times, times[1:], strict=False), tokens[1:], strict=False):
        if n > 0:
            intervals.extend([(right - left) / n] * n)
    return intervals
