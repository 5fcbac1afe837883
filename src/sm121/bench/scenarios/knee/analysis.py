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
from typing import Any

from sm121.bench.stats import summarize

TOLERANCE = 0.05
WINDOWS = ("engine", "client")


def curve(samples: list[dict[str, Any]], kind: str, key: str, rate: str) -> list[dict[str, Any]]:
    """Rows sorted by `key` (step or batch): median, min, max, n of `rate` over the
    repetitions (warm-up samples, rep < 0, are left out)."""
    groups: dict[int, list[float | None]] = defaultdict(list)
    for sample in samples:
        if sample.get("kind") == kind and sample.get("rep", 0) >= 0:
            groups[int(sample[key])].append(sample.get(rate))
    return [{key: size, **summarize(values)} for size, values in sorted(groups.items())]


def knee_of(rows: list[dict[str, Any]], key: str, tolerance: float = TOLERANCE
            ) -> dict[str, Any]:
    """Peak and the smallest size within `tolerance` of it, from curve() rows."""
    measured = [r for r in rows if r["median"] is not None]
    if not measured:
        return {"peak": None, "peak_at": None, "knee_at": None, "knee_rate": None}
    peak_row = max(measured, key=lambda r: r["median"])
    knee_row = next(r for r in measured if r["median"] >= (1 - tolerance) * peak_row["median"])
    return {"peak": peak_row["median"], "peak_at": peak_row[key], "knee_at": knee_row[key],
            "knee_rate": knee_row["median"],
            "share_of_peak": {str(r[key]): r["median"] / peak_row["median"] for r in measured}}


def rate_at(rows: list[dict[str, Any]], key: str, size: int) -> float | None:
    """The median rate at `size`, interpolated linearly in log2(size) between measured sizes
    (clamped to the measured range)."""
    measured = [(r[key], r["median"]) for r in rows if r["median"] is not None]
    if not measured:
        return None
    if size <= measured[0][0]:
        return float(measured[0][1])
    for (lo, lo_rate), (hi, hi_rate) in zip(measured, measured[1:], strict=False):
        if lo <= size <= hi:
            share = (math.log2(size) - math.log2(lo)) / (math.log2(hi) - math.log2(lo))
            return float(lo_rate + share * (hi_rate - lo_rate))
    return float(measured[-1][1])


def prefill_cost(rows: list[dict[str, Any]], step: int, reference: int = 8192) -> float | None:
    """How much slower a long prefill runs in steps of `step` tokens than in steps of
    `reference` (the field's batch-8192): 1 - rate(step) / rate(reference); negative when
    `step` is faster."""
    here, there = rate_at(rows, "step", step), rate_at(rows, "step", reference)
    return None if here is None or not there else 1.0 - here / there


def summarize_knee(samples: list[dict[str, Any]], tolerance: float = TOLERANCE
                   ) -> dict[str, Any]:
    """Both curves in both windows, the knee and the decode saturation point of each."""
    out: dict[str, Any] = {"tolerance": tolerance}
    for window in WINDOWS:
        prefill = curve(samples, "prefill", "step", f"{window}_tok_s")
        decode = curve(samples, "decode", "batch", f"{window}_tok_s")
        sat = knee_of(decode, "batch", tolerance)
        largest = max((r["batch"] for r in decode if r["median"] is not None), default=None)
        out[window] = {
            "prefill": prefill, "knee": knee_of(prefill, "step", tolerance),
            "decode": decode, "decode_saturation": {
                **sat, "saturated": sat["knee_at"] is not None and sat["knee_at"] != largest}}
    return out
