"""One agents run at another N on the boot that measured an arm's repetitions (a capacity
probe, tune/capacity.py chooses the N), and whether the arm met the SLO at the target N."""

from __future__ import annotations

import asyncio
from pathlib import Path

from sm121.bench.boot import Boot, steps
from sm121.bench.runner import Target, run_scenario
from sm121.bench.scenarios.agents.models import AgentsAbEntry
from sm121.bench.scenarios.agents.params import AgentRunParams
from sm121.bench.scenarios.agents.scenario import Agents
from sm121.bench.tune.result import Probe
from sm121.progress import Say


def met_at_target(entries: list[AgentsAbEntry], name: str) -> bool | None:
    """Whether the candidate met the SLO at the target N: a majority of its repetitions."""
    met = [bool(e.metrics.slo_met) for e in entries
           if e.profile == name and e.measured()]
    return None if not met else sum(met) * 2 > len(met)


def run_point(boot: Boot, params: AgentRunParams, n: int, out: Path, say: Say) -> Probe:
    spec = Agents()
    results = asyncio.run(run_scenario(
        spec, Target(boot.plan.base_url, boot.plan.readiness.model, api=spec.api),
        {**params.model_dump(), "agents": n}, out, progress=steps(say, f"N={n}: ")))
    metrics = spec.flatten(results.samples)
    return Probe(agents=n, slo_met=bool(metrics.slo_met), goodput=metrics.goodput,
                 good_turns=metrics.good_turns, judged_turns=metrics.judged_turns,
                 ttft_p95_judged_s=metrics.ttft_p95_judged_s,
                 ttft_p95_during_background_s=metrics.ttft_p95_during_background_s,
                 decode_p50=metrics.decode_p50, background_ttft_s=metrics.background_ttft_s,
                 results_file=str(out), run_id=boot.run_id)
