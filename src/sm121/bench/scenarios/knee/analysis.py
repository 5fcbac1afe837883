"""The knee of the prefill curve and where decode saturates (pure): medians and spread over
repetitions per step size or batch size, in the engine's window and the client's.

The knee is the smallest step whose median prefill rate is within `tolerance` (5%) of the
peak median rate: below it the steps are too small to feed the device, above it a larger
step buys under 5%. Decode saturates at the smallest batch whose median aggregate rate is
within `tolerance` of the peak; when that is the largest batch measured, decode had not
saturated in the range (`saturated` is False)."""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Literal

from sm121.bench.cached import counts_reported, summed_cached
from sm121.bench.scenarios.knee.models import (
    TOLERANCE,
    BatchRate,
    KneePoint,
    KneeSample,
    KneeSummary,
    KneeWindow,
    Saturation,
    StepRate,
)
from sm121.bench.stats import summarize

WINDOWS = ("engine", "client")
Curve = list[StepRate] | list[BatchRate]
Size = Literal["step", "batch"]


def _groups(samples: list[KneeSample], kind: str, key: Size, rate: str
            ) -> list[tuple[int, list[float | None]]]:
    """The `rate` of every measured repetition by size (warm-up samples, rep < 0, left out)."""
    groups: dict[int, list[float | None]] = defaultdict(list)
    for sample in samples:
        if sample.kind == kind and sample.rep >= 0:
            groups[int(getattr(sample, key))].append(getattr(sample, rate, None))
    return sorted(groups.items())


def prefill_curve(samples: list[KneeSample], rate: str) -> list[StepRate]:
    """Median, min, max, n of `rate` per step size, sorted by step."""
    return [StepRate(step=size, **summarize(values))
            for size, values in _groups(samples, "prefill", "step", rate)]


def decode_curve(samples: list[KneeSample], rate: str) -> list[BatchRate]:
    return [BatchRate(batch=size, **summarize(values))
            for size, values in _groups(samples, "decode", "batch", rate)]


def _sized(rows: Curve, key: Size) -> list[tuple[int, float]]:
    """(size, median) of the measured points of a curve, in its order."""
    return [(int(getattr(r, key)), float(r.median)) for r in rows if r.median is not None]


def knee_of(rows: Curve, key: Size, tolerance: float = TOLERANCE) -> KneePoint:
    """Peak and the smallest size within `tolerance` of it, from a curve."""
    measured = _sized(rows, key)
    if not measured:
        return KneePoint(peak=None, peak_at=None, knee_at=None, knee_rate=None)
    peak_at, peak = max(measured, key=lambda point: point[1])
    knee_at, knee_rate = next(p for p in measured if p[1] >= (1 - tolerance) * peak)
    return KneePoint(peak=peak, peak_at=peak_at, knee_at=knee_at, knee_rate=knee_rate,
                     share_of_peak={str(size): rate / peak for size, rate in measured})


def rate_at(rows: Curve, key: Size, size: int) -> float | None:
    """The median rate at `size`, interpolated linearly in log2(size) between measured sizes
    (clamped to the measured range)."""
    measured = _sized(rows, key)
    if not measured:
        return None
    if size <= measured[0][0]:
        return measured[0][1]
    for (lo, lo_rate), (hi, hi_rate) in zip(measured, measured[1:], strict=False):
        if lo <= size <= hi:
            share = (math.log2(size) - math.log2(lo)) / (math.log2(hi) - math.log2(lo))
            return lo_rate + share * (hi_rate - lo_rate)
    return measured[-1][1]


def prefill_cost(rows: list[StepRate], step: int, reference: int = 8192) -> float | None:
    """How much slower a long prefill runs in steps of `step` tokens than in steps of
    `reference` (the field's batch-8192): 1 - rate(step) / rate(reference); negative when
    `step` is faster."""
    here, there = rate_at(rows, "step", step), rate_at(rows, "step", reference)
    return None if here is None or not there else 1.0 - here / there


def _window(samples: list[KneeSample], window: str, tolerance: float) -> KneeWindow:
    prefill = prefill_curve(samples, f"{window}_tok_s")
    decode = decode_curve(samples, f"{window}_tok_s")
    sat = knee_of(decode, "batch", tolerance)
    largest = max((r.batch for r in decode if r.median is not None), default=None)
    saturation = Saturation(**sat.model_dump(exclude_unset=True),
                            saturated=sat.knee_at is not None and sat.knee_at != largest)
    return KneeWindow(prefill=prefill, knee=knee_of(prefill, "step", tolerance),
                      decode=decode, decode_saturation=saturation)


def prefill_cached(samples: list[KneeSample]) -> int | None:
    """The prompt tokens the salted prefill prompts (warm-ups too) found cached, summed by
    bench/cached.py's rule: a prompt with no count, where another says one, found none; None
    where none says one (the engine sends no count: the salt is not checked, never "0")."""
    counts = [(getattr(s, "cached_tokens", None), getattr(s, "prompt_tokens", None))
              for s in samples if s.kind == "prefill"]
    return summed_cached(counts, counts_reported(cached for cached, _ in counts))


def summarize_knee(samples: list[KneeSample], tolerance: float = TOLERANCE) -> KneeSummary:
    """Both curves in both windows, the knee and the decode saturation point of each, and
    what the salted prompts found cached."""
    return KneeSummary(tolerance=tolerance, engine=_window(samples, "engine", tolerance),
                       client=_window(samples, "client", tolerance),
                       prefill_cached=prefill_cached(samples))
