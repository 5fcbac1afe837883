"""Choosing a serve profile by agent goodput: the A/B's verdict, and why, term by term."""

from __future__ import annotations

from statistics import median
from typing import Any


def _show(value: float | None, pct: bool = False) -> str:
    if value is None:
        return "-"
    return f"{value:.1%}" if pct else f"{value:.3g}"


def _median(values: list[Any]) -> float | None:
    kept = [float(v) for v in values if v is not None]
    return median(kept) if kept else None


def verdict(samples: list[dict[str, Any]], profiles: list[str]) -> dict[str, Any]:
    """The profile with the highest median goodput (ties: the lower TTFT p95), and per SLO
    term each profile's median observed value."""
    per: dict[str, dict[str, Any]] = {}
    for profile in profiles:
        runs = [s["metrics"] for s in samples if s["profile"] == profile and s.get("metrics")]
        terms: dict[str, list[Any]] = {}
        for run in runs:
            for term, value in (run.get("slo_terms") or {}).items():
                terms.setdefault(term, []).append(value)
        per[profile] = {"goodput": _median([r.get("goodput") for r in runs]),
                        "ttft_p95_s": _median([r.get("ttft_p95_judged_s", r.get("ttft_p95_s"))
                                               for r in runs]),
                        "terms": {t: _median(v) for t, v in terms.items()}, "reps": len(runs)}
    ranked = sorted((p for p in profiles if per[p]["goodput"] is not None),
                    key=lambda p: (-per[p]["goodput"], per[p]["ttft_p95_s"] or float("inf")))
    if not ranked:
        return {"best": None, "why": "no profile was measured", "profiles": per}
    best = ranked[0]
    why = "; ".join(
        f"{p}: goodput {_show(per[p]['goodput'], pct=True)}" + "".join(
            f", {term} observed {_show(value)}" for term, value in per[p]["terms"].items())
        for p in ranked)
    return {"best": best, "why": f"median over repetitions: {why}.", "profiles": per}


def largest_meeting(points: list[dict[str, Any]]) -> int | None:
    """The largest N that meets the SLO with every smaller N meeting it too: a lucky run
    above a failing one is not capacity."""
    best = None
    for point in sorted(points, key=lambda p: p["agents"]):
        if not point["metrics"].get("slo_met"):
            break
        best = point["agents"]
    return best
