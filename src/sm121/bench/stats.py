"""Pure metric functions: windows, clipped gaps, same-stream baselines, validity checks and
summaries of repetitions. Times are seconds on one clock; streams are (times, tokens) with a
token count per chunk."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
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


def engine_start(times: Sequence[float], tokens: Sequence[int], submitted: float,
                 first_token: float, before_rate: float | None,
                 fast_fraction: float = 0.2, slow_fraction: float = 0.5,
                 step_tokens: int = 8, starved_s: float = 0.5) -> float | None:
    """When the engine really began the prefill, seen from the ongoing stream: where its
    delivered-token curve y(t) turns from undisturbed to starved. That is the maximum of
    y(t) - s * R * (t - submitted), R the undisturbed rate and s `slow_fraction`: the curve
    rises while the stream delivers faster than s * R (the API server still tokenising, or
    flushing output it had fallen behind on) and falls once the prefill starves it. A single
    stall threshold is not enough: on a loaded host the stream arrives in bursts with
    multi-second pauses even before the prefill.

    The maximum taken is the first one the curve then falls well below (by `starved_s` of
    stalled decode): a backlog the API server flushes later, after a starved stretch, is
    decode during the prefill delivered late, so it stays inside the engine window, where
    the delivery check sees it as a burst.

    Why not a two-segment straight-line fit (the first version): with a small prefill chunk
    the starved rate keeps falling as the prefill's context grows, and the fit put the break
    seconds late. On the H200 at threshold 256 it gave 241-252 decode tokens in the engine
    window where the engine ran 391 steps (one decode token each), or found no break at all;
    this maximum gives 393, with the break at the measured tokenisation time
    (tests/unit/bench/test_engine_window_gpu.py checks every committed H200 repetition).

    A slowed stretch may come between: on a 2-core host the API server's tokenising slows the
    stream to about a third before the engine starves it to a trickle (the CPU testbed). The
    engine start is then the later, sharper turn (`_sharper_turn`), not the first.

    None when there is no distinct fast-then-slow shape (then the engine started at once and
    the client window is the engine window), or without an undisturbed rate to compare with."""
    inside = [(t, n) for t, n in zip(times, tokens, strict=True) if submitted < t <= first_token]
    if len(inside) < 3 or first_token <= submitted or not before_rate:
        return None
    t = np.asarray([submitted] + [p[0] for p in inside], dtype=float)
    y = np.concatenate([[0.0], np.cumsum([p[1] for p in inside])]).astype(float)
    k, fell = _first_peak(y - slow_fraction * before_rate * (t - submitted),
                          max(step_tokens, slow_fraction * before_rate * starved_s))
    if fell:  # a slowed stretch from the submission on may still turn sharply later
        k = _sharper_turn(t, y, k, fast_fraction * before_rate, slow_fraction, step_tokens,
                          starved_s)
    if k == 0 or y[k] / (t[k] - submitted) < fast_fraction * before_rate:
        return None  # slow from the submission on: no undisturbed stretch
    if fell:
        return float(t[k])
    # The curve never fell that far (a short window): starved still means slower than half
    # the stretch before, with at least one engine step's worth of tokens missing.
    after_s = first_token - t[k]
    if after_s <= 0:
        return None
    gained = y[-1] - y[k]
    if (gained / after_s > slow_fraction * y[k] / (t[k] - submitted)
            or before_rate * after_s - gained < step_tokens):
        return None
    return float(t[k])


def _sharper_turn(t: np.ndarray, y: np.ndarray, k: int, fast_rate: float,
                  slow_fraction: float, step_tokens: int, starved_s: float,
                  sharp_fraction: float = 0.2) -> int:
    """The turn after `k` when the stretch after `k` is only slowed (at least `fast_rate`) and
    then falls by another factor of 1 / `sharp_fraction`; else `k`. The factor keeps a starved
    rate that merely keeps falling as the prefill's context grows (two to three times over a
    100,000-token prefill on the H200) from moving the start late."""
    ref = int(np.searchsorted(y, y[k] + step_tokens))  # the slowed stretch's first tokens
    if ref >= len(t) - 1:
        return k
    mid_rate = (y[ref] - y[k]) / (t[ref] - t[k])
    if mid_rate < fast_rate:
        return k
    j, fell = _first_peak(y[k:] - y[k] - slow_fraction * mid_rate * (t[k:] - t[k]),
                          max(step_tokens, slow_fraction * mid_rate * starved_s))
    turn = k + j
    if not fell or j == 0 or t[-1] <= t[turn]:
        return k
    before = (y[turn] - y[k]) / (t[turn] - t[k])
    after = (y[-1] - y[turn]) / (t[-1] - t[turn])
    return turn if after <= sharp_fraction * before else k


def _first_peak(z: np.ndarray, drop: float) -> tuple[int, bool]:
    """The index of the running maximum of z when z first falls `drop` below it (and True);
    the global maximum when it never does (and False)."""
    best = 0
    for i in range(1, len(z)):
        if z[i] > z[best]:
            best = i
        elif z[i] <= z[best] - drop:
            return best, True
    return best, False


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


def _binom_log_pmf(k: int, n: int, p: float) -> float:
    return (math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)
            + k * math.log(p) + (n - k) * math.log1p(-p))


def binom_cdf(k: int, n: int, p: float) -> float:
    """P(X <= k) for X ~ Binomial(n, p), an exact sum (in logs, so large n stays finite)."""
    if k < 0:
        return 0.0
    if k >= n or p <= 0.0:
        return 1.0
    if p >= 1.0:
        return 0.0
    return min(1.0, sum(math.exp(_binom_log_pmf(i, n, p)) for i in range(k + 1)))


def _solve(f: Callable[[float], float], target: float) -> float:
    """p in [0, 1] with f(p) = target, f decreasing in p (bisection to 1e-12)."""
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if f(mid) > target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def clopper_pearson(successes: int, trials: int, confidence: float = 0.95
                    ) -> tuple[float, float]:
    """The exact (Clopper-Pearson) interval of a binomial proportion: the p whose tail
    probabilities are (1 - confidence) / 2 each, found by bisection on the exact binomial
    sum (no scipy). 32 of 32 gives (0.891, 1.0): a saturated goodput bounds little."""
    if trials < 1 or not 0 <= successes <= trials:
        raise ValueError(f"need 0 <= successes <= trials and trials >= 1: {successes}/{trials}")
    alpha = (1 - confidence) / 2
    # lower: P(X >= k | p) = alpha, i.e. P(X <= k - 1 | p) = 1 - alpha (decreasing in p)
    lower = 0.0 if successes == 0 else _solve(
        lambda p: binom_cdf(successes - 1, trials, p), 1 - alpha)
    # upper: P(X <= k | p) = alpha
    upper = 1.0 if successes == trials else _solve(
        lambda p: binom_cdf(successes, trials, p), alpha)
    return lower, upper


# Student's t, two-sided 95% (0.975 quantile), by degrees of freedom 1-10; above 10 the
# approximation 1.96 + 2.4/df is within 0.01 of the table.
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228)


def t975(df: int) -> float:
    if df < 1:
        raise ValueError("degrees of freedom must be at least 1")
    return _T975[df - 1] if df <= len(_T975) else 1.96 + 2.4 / df


def difference_interval(a: Sequence[float], b: Sequence[float]) -> tuple[float, float, float]:
    """mean(a) - mean(b) with its 95% interval (Welch's standard error, the smaller sample's
    degrees of freedom: conservative). Needs at least 2 values on each side."""
    if len(a) < 2 or len(b) < 2:
        raise ValueError("an interval over boots needs at least 2 boots per arm")
    ma, mb = sum(a) / len(a), sum(b) / len(b)
    va = sum((x - ma) ** 2 for x in a) / (len(a) - 1)
    vb = sum((x - mb) ** 2 for x in b) / (len(b) - 1)
    half = t975(min(len(a), len(b)) - 1) * math.sqrt(va / len(a) + vb / len(b))
    return ma - mb, ma - mb - half, ma - mb + half
