"""The agent-count sweep of one candidate, on the boot that measured its repetitions: from
the target N up (N + N/2, 2N, ...) while the SLO holds, or down (N/2, N/4, ...) until it
holds. One agents run per point; the largest N meeting the SLO counts only when every
smaller N measured met it too (bench sweep's rule)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sm121.bench.agents.sweep import largest_meeting
from sm121.bench.boot import Boot, steps
from sm121.bench.runner import Target, run_scenario
from sm121.bench.scenarios import get

Say = Callable[[str], None]


def met_at_target(samples: list[dict[str, Any]], name: str) -> bool | None:
    """Whether the candidate met the SLO at the target N: a majority of its repetitions."""
    met = [bool(s["metrics"].get("slo_met")) for s in samples
           if s["profile"] == name and not s.get("error") and s.get("metrics")]
    return None if not met else sum(met) * 2 > len(met)


def next_n(target: int, met: bool, done: list[dict[str, Any]]) -> int | None:
    """The next agent count to try, or None when the sweep has its answer."""
    tried = {p["agents"]: p["slo_met"] for p in done}
    n = target
    while True:
        n = n + max(1, target // 2) if met else n // 2
        if n < 1:
            return None
        if n not in tried:
            return n
        if tried[n] != met:  # the bound is found: up it failed, or down it held
            return None


def largest_n(target: int, met: bool | None, done: list[dict[str, Any]]) -> int | None:
    if met is None:
        return None
    points = [{"agents": target, "metrics": {"slo_met": met}}] + [
        {"agents": p["agents"], "metrics": {"slo_met": p["slo_met"]}} for p in done]
    return largest_meeting(points)


def run_point(boot: Boot, params: dict[str, Any], n: int, out: Path, say: Say
              ) -> dict[str, Any]:
    spec = get("agents")
    results = asyncio.run(run_scenario(
        "agents", spec.scenario(), Target(boot.plan.base_url, boot.plan.readiness.model, api="chat"),
        {**params, "agents": n}, out, progress=steps(say, f"N={n}: "),
        needs_stream=True))
    metrics = spec.flat(results.data["samples"])
    return {"agents": n, "slo_met": bool(metrics.get("slo_met")),
            "goodput": metrics.get("goodput"), "ttft_p95_judged_s":
            metrics.get("ttft_p95_judged_s"), "results_file": str(out), "run_id": boot.run_id}
