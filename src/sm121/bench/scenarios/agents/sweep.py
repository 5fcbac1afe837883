"""`sweep`: the agents scenario at N = 1, 2, 4, ... on one server, and the largest N whose
run still meets the SLO (the knee). Each N is its own results file; the sweep file keeps
every run's raw samples, so its report recomputes from them."""

from __future__ import annotations

from pathlib import Path

from sm121.bench.results import ResultsFile
from sm121.bench.runner import Target, run_scenario
from sm121.bench.scenarios.agents.choose import largest_meeting
from sm121.bench.scenarios.agents.models import AgentsSweepEntry
from sm121.bench.scenarios.agents.params import AgentRunParams
from sm121.bench.scenarios.agents.scenario import Agents
from sm121.progress import Progress

__all__ = ["largest_meeting", "run_sweep"]


def _prefixed(progress: Progress, prefix: str) -> Progress:
    def update(message: str, done: float | None = None, total: float | None = None, /
               ) -> None:
        progress(prefix + message, done, total)

    return update


async def run_sweep(target: Target, ns: list[int], params: AgentRunParams, out: Path,
                    progress: Progress) -> ResultsFile:
    spec = Agents()
    results = ResultsFile(out, "sweep", "agents", {**params.model_dump(), "agents": ns})
    with results.recording():
        for n in ns:
            sub = out.with_suffix("") / f"agents-{n}.json"
            run = await run_scenario(spec, target, {**params.model_dump(), "agents": n}, sub,
                                     progress=_prefixed(progress, f"N={n}: "))
            results.add_sample({"agents": n, "results_file": str(sub),
                                "samples": [s.to_json() for s in run.samples],
                                "metrics": spec.headline_metrics(run.samples).to_json()})
            points = results.data["samples"]
            results.set(summary={"slo": params.slo,
                                 "largest_n": largest_meeting(
                                     [AgentsSweepEntry.model_validate(p) for p in points]),
                                 "points": [{"agents": p["agents"], **p["metrics"]}
                                            for p in points]})
    return results
