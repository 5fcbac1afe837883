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


def _segment_sse(t: np.ndarray, y: np.ndarray) -> np.ndarray:
    """SSE of a least-squares line through points[0..k], for every k (vectorised)."""
    n = np.arange(1, len(t) + 1, dtype=float)
    st, sy = np.cumsum(t), np.cumsum(y)
    stt = np.cumsum(t * t) - st * st / n
    syy = np.cumsum(y * y) - sy * sy / n
    sty = np.cumsum(t * y) - st * sy / n
    with np.errstate(divide="ignore", invalid="ignore"):
        sse = syy - np.where(stt > 0, sty * sty / stt, 0.0)
    return np.maximum(sse, 0.0)


def engine_start(times: Sequence[float], tokens: Sequence[int], submitted: float,
                 first_token: float, before_rate: float | None,
                 fast_fraction: float = 0.2, slow_fraction: float = 0.5,
                 burst_gap_s: float = 0.005, step_tokens: int = 8) -> float | None:
    """When the engine really began the prefill, seen from the ongoing stream: the knee where
    its delivered-token curve turns from undisturbed to starved (a two-segment least-squares
    fit over the client window). Before the knee the API server was still tokenising, or
    flushing output it had fallen behind on, and the stream decoded undisturbed. A single
    stall threshold is not enough: on a loaded host the stream arrives in bursts with
    multi-second pauses even before the prefill. None when there is no distinct fast-then-slow
    shape (then the engine started at once and the client window is the engine window)."""
    inside = [(t, n) for t, n in zip(times, tokens, strict=True) if submitted < t <= first_token]
    if len(inside) < 3 or first_token <= submitted:
        return None
    t = np.asarray([submitted] + [p[0] for p in inside], dtype=float)
    y = np.concatenate([[0.0], np.cumsum([p[1] for p in inside])]).astype(float)
    left = _segment_sse(t, y)
    right = _segment_sse(t[::-1], y[::-1])[::-1]
    k = int(np.argmin(left[1:-1] + right[1:-1])) + 1
    rate_left = y[k] / (t[k] - submitted) if t[k] > submitted else 0.0
    rate_right = (y[-1] - y[k]) / (first_token - t[k]) if first_token > t[k] else 0.0
    fast = before_rate is None or rate_left >= fast_fraction * before_rate
    if not (fast and rate_right <= slow_fraction * rate_left):
        return None
    return _past_flush(t, y, k, burst_gap_s, step_tokens)


def _past_flush(t: np.ndarray, y: np.ndarray, k: int, burst_gap_s: float,
                step_tokens: int) -> float:
    """The fit may cut a backlog flush short. A group of chunks arriving together (within
    `burst_gap_s`) that carries more tokens than one engine step can give one stream
    (`step_tokens`, room for speculative tokens) is still backlog: the window opens after it."""
    while k + 1 < len(t):
        end = k + 1
        while end + 1 < len(t) and t[end + 1] - t[end] < burst_gap_s:
            end += 1
        if y[end] - y[k] <= step_tokens:
            break
        k = end
    return float(t[k])


def largest_burst(times: Sequence[float], tokens: Sequence[int], window: Window,
                  span_s: float = 0.05) -> int:
    """Most tokens that arrived within `span_s` inside the window. A decode stream delivers
    one step at a time; hundreds of tokens at once are a backlog being flushed (the API
    server or the client fell behind), generated earlier than they arrived."""
    inside = [(t, n) for t, n in zip(times, tokens, strict=True) if window.start < t <= window.end]
    best = total = lo = 0
    for t, n in inside:
        total += n
        while inside[lo][0] < t - span_s:
            total -= inside[lo][1]
            lo += 1
        best = max(best, total)
    return best


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
