"""Choosing a serve profile by agent goodput: the A/B's verdict, and why, term by term."""

from __future__ import annotations

from statistics import median

from sm121.bench.result_models import ProfileVerdict, Verdict
from sm121.bench.scenarios.agents.models import AgentsAbEntry, AgentsSweepEntry, RunMetrics


def _show(value: float | None, pct: bool = False) -> str:
    if value is None:
        return "-"
    return f"{value:.1%}" if pct else f"{value:.3g}"


def _median(values: list[float | None]) -> float | None:
    kept = [float(v) for v in values if v is not None]
    return median(kept) if kept else None


def choose_profile(runs: dict[str, list[RunMetrics]]) -> Verdict:
    """The profile with the highest median goodput (ties: the lower TTFT p95), and per SLO
    term each profile's median observed value. `runs`: profile -> its runs' metrics."""
    per: dict[str, ProfileVerdict] = {}
    for profile, measured in runs.items():
        terms: dict[str, list[float | None]] = {}
        for run in measured:
            for term, value in run.slo_terms.items():
                terms.setdefault(term, []).append(value)
        per[profile] = ProfileVerdict(
            goodput=_median([r.goodput for r in measured]),
            ttft_p95_s=_median([r.judged_ttft_p95() for r in measured]),
            terms={t: _median(v) for t, v in terms.items()}, reps=len(measured))
    ranked = sorted((p for p in runs if per[p].goodput is not None),
                    key=lambda p: (-(per[p].goodput or 0.0), per[p].ttft_p95_s or float("inf")))
    if not ranked:
        return Verdict(best=None, why="no profile was measured", profiles=per)
    why = "; ".join(
        f"{p}: goodput {_show(per[p].goodput, pct=True)}" + "".join(
            f", {term} observed {_show(value)}" for term, value in per[p].terms.items())
        for p in ranked)
    return Verdict(best=ranked[0], why=f"median over repetitions: {why}.", profiles=per)


def verdict(entries: list[AgentsAbEntry], profiles: list[str]) -> Verdict:
    """An A/B's verdict from its entries: each profile's measured repetitions' metrics."""
    runs = {profile: [e.metrics for e in entries if e.profile == profile and e.measured()]
            for profile in profiles}
    return choose_profile(runs)


def largest_meeting(points: list[AgentsSweepEntry]) -> int | None:
    """The largest N that meets the SLO with every smaller N meeting it too: a lucky run
    above a failing one is not capacity."""
    best = None
    for point in sorted(points, key=lambda p: p.agents):
        if not (point.measured() and point.metrics.slo_met):
            break
        best = point.agents
    return best
