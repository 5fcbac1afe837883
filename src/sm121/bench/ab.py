"""`ab`: serve each profile of a recipe through sm121's own launcher, run one scenario on it,
stop it, and compare. The order alternates between repetitions (A B, then B A) so that a
slow drift of a shared machine does not favour one profile; medians and spread per metric."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sm121.bench.compare import compare_with
from sm121.bench.results import ResultsFile
from sm121.bench.runner import Target, run_scenario
from sm121.bench.scenarios import get
from sm121.recipes.schema import ArgValue

Say = Callable[[str], None]


@dataclass(frozen=True)
class AbRequest:
    recipe: str
    profiles: list[str]
    scenario: str
    reps: int
    params: dict[str, Any]
    out: Path
    port: int
    host: str = "127.0.0.1"
    overrides: dict[str, ArgValue] = field(default_factory=dict)  # --set, parsed
    resume: bool = False
    trust: bool = False  # --trust: what a recipe that is not built in asks to run
    api: str | None = None  # --api: the protocol the scenario speaks (None: its own)


def run_order(profiles: list[str], reps: int) -> list[tuple[int, str]]:
    """(rep, profile) in run order: forward on even repetitions, reversed on odd ones."""
    return [(rep, p) for rep in range(reps)
            for p in (profiles if rep % 2 == 0 else list(reversed(profiles)))]


def run_ab(request: AbRequest, say: Say = lambda _: None) -> ResultsFile:
    """Every (rep, profile) in alternating order. A boot or scenario that fails is recorded
    with its error and the A/B goes on; with `resume`, pairs already measured are skipped."""
    results = ResultsFile(request.out, "ab", request.scenario, {
        "recipe": request.recipe, "profiles": request.profiles, "reps": request.reps,
        "overrides": request.overrides, "scenario_params": request.params,
        "order": [f"{rep}:{p}" for rep, p in run_order(request.profiles, request.reps)]},
        resume=request.resume)
    done = {(s["rep"], s["profile"]) for s in results.data["samples"] if not s.get("error")}
    with results.recording():
        for index, (rep, profile) in enumerate(run_order(request.profiles, request.reps)):
            if (rep, profile) in done:
                continue
            say(f"[{index + 1}/{request.reps * len(request.profiles)}] rep {rep + 1}, "
                f"profile {profile}")
            results.add_sample(_measure_or_record(request, profile, rep, say))
            measured = [s for s in results.data["samples"] if not s.get("error")]
            results.set(summary=compare(measured, request.profiles, request.scenario))
    return results


def _measure_or_record(request: AbRequest, profile: str, rep: int, say: Say) -> dict[str, Any]:
    try:
        return _serve_and_measure(request, profile, rep, say)
    except Exception as exc:  # one bad boot must not lose the other profiles' results
        say(f"  {profile}: failed: {exc}")
        return {"profile": profile, "rep": rep, "error": str(exc), "metrics": {}}


def _serve_and_measure(request: AbRequest, profile: str, rep: int, say: Say) -> dict[str, Any]:
    from sm121.launch.control import stop_run
    from sm121.launch.local import serve_local
    from sm121.plan.build import build_plan

    plan = build_plan(request.recipe, profile, None, request.overrides, request.port,
                      request.host)
    def said(what: str, done: float | None = None, total: float | None = None, /) -> None:
        say(f"  {profile}: {what}")  # steps only: the A/B shows its own counts

    run, process = serve_local(plan, progress=said, trust=request.trust)
    sub_out = request.out.with_suffix("") / f"{profile}-rep{rep + 1}.json"
    spec = get(request.scenario)
    try:
        say(f"  {profile}: ready, running {request.scenario}")
        scenario_results = asyncio.run(run_scenario(
            request.scenario, spec.scenario(), Target(plan.base_url, plan.readiness.model,
                                               api=request.api or spec.api),
            {**request.params, "reps": 1}, sub_out,
            progress=said,
            needs_stream=spec.needs_stream))
    finally:
        stop_run(run)
        process.wait(timeout=60)
    data = scenario_results.data
    return {"profile": profile, "rep": rep, "run_id": run.run_id,
            "engine_args": plan.engine_args, "boot": run.boot.model_dump(mode="json"),
            "timings": run.timings.model_dump(mode="json"), "results_file": str(sub_out),
            "server": data["server"], "probe": data["probe"], "samples": data["samples"],
            "summary": data["summary"],
            "metrics": spec.flat(data["samples"])}


def compare(samples: list[dict[str, Any]], profiles: list[str], scenario: str
            ) -> dict[str, Any]:
    """Per metric and profile: median, min, max, n over repetitions, and the ratio of each
    median to the first profile's (the baseline)."""
    return compare_with(get(scenario), samples, profiles)
