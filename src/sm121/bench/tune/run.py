"""`sm121 tune`: boot the recipe for its knee, derive candidates, measure them as an agents
A/B with repetitions per boot and an agent-count sweep on the same boot, pick, report, and
write the `tuned` profile into the user's recipe. Every step is saved in OUT/tune.json and
OUT's results files, so a rerun with the same arguments resumes."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import replace
from importlib import resources
from pathlib import Path
from typing import Any

from sm121.bench.ab import AbRequest, boot_and_measure, measured_pairs, open_results
from sm121.bench.boot import Boot
from sm121.bench.knee_run import knee_on_recipe
from sm121.bench.results import ResultsFile, load_results
from sm121.bench.tune import candidates as cands
from sm121.bench.tune.budget import Estimates, candidate_cost, plan
from sm121.bench.tune.choose import choose, tuned_profile
from sm121.bench.tune.knobs import knobs_of, version_flags
from sm121.bench.tune.recipe_write import write_tuned
from sm121.bench.tune.report import write_report
from sm121.bench.tune.request import TuneRequest, agent_params
from sm121.bench.tune.state import TuneState
from sm121.bench.tune.sweep import largest_n, met_at_target, next_n, run_point
from sm121.errors import Sm121Error
from sm121.plan.effective import profile_args
from sm121.plan.trust import trust_needs
from sm121.recipes.loader import load_recipe

Say = Callable[[str], None]
SETUP_S = 10.0  # an agents run's probe and prompt building, beyond its measured wall_s


def run_tune(request: TuneRequest, say: Say = lambda _: None) -> dict[str, Any]:
    state = TuneState(request.out, request.to_json(), fresh=request.fresh)
    try:
        return _tune(request, state, say)
    finally:  # an interrupted tune keeps the time it spent (the budget counts it)
        state.save()


def _tune(request: TuneRequest, state: TuneState, say: Say) -> dict[str, Any]:
    loaded = load_recipe(request.recipe)
    recipe = loaded.recipe
    base = recipe.default_profile or next(iter(recipe.profiles))
    knee = _knee(request, state, base, say)
    names = request.baselines if request.baselines is not None else \
        [p for p in (base, "agent-admission") if p in recipe.profiles]
    if "candidates" not in state.data:
        flags, flags_version = version_flags(recipe)
        engine = knee["summary"]["engine"]
        found = cands.derive(
            engine["knee"]["knee_at"], engine["decode_saturation"]["knee_at"], base,
            profile_args(recipe, base),
            {n: profile_args(recipe, n) for n in dict.fromkeys(names)}, request.agents, flags,
            knobs_of(recipe.engine.kind))
        state.set(candidates=[c.to_json() for c in found], flags_version=flags_version)
    found = [cands.Candidate.from_json(c) for c in state.data["candidates"]]
    say(f"candidates: {', '.join(c.name for c in found)}")
    ab = _ab(request, state, found, knee, say)
    result = choose(request, state, found, knee, ab.data)
    state.set(result=result)
    report = write_report(request.out, knee, ab.data, state.data)
    state.set(report=str(report))
    if request.write and result.get("chosen"):
        text = _recipe_text(recipe.name, loaded.builtin, loaded.source)
        profile = tuned_profile(request, state.data, found, knee, report)
        path = write_tuned(recipe.name, text, profile)
        needs = trust_needs(load_recipe(recipe.name).recipe, "tuned", builtin=False)
        # Shown as $SM121_HOME/..., so a committed report names no machine's folders.
        state.set(written=f"$SM121_HOME/recipes/{path.name}", serve_needs_trust=needs)
        write_report(request.out, knee, ab.data, state.data)
        say(f"wrote profile `tuned` into {path}")
    state.set(status="complete")
    return state.data


def _recipe_text(name: str, builtin: bool, source: str) -> str:
    if builtin:
        return resources.files("sm121.recipes").joinpath(f"builtin/{name}.yaml").read_text()
    return Path(source).read_text()


def _knee(request: TuneRequest, state: TuneState, base: str, say: Say) -> dict[str, Any]:
    path = request.out / "knee.json"
    if request.knee_file is not None and not path.is_file():
        shutil.copyfile(request.knee_file, path)
    if path.is_file():
        data = load_results(path)
        if data.get("status") == "complete":
            say(f"knee: measured ({path})")
            return data
    say(f"knee: booting {request.recipe} for the knee")
    results = knee_on_recipe(request.recipe, base, {}, request.knee_params, path, request.port,
                             trust=request.trust, say=say, cluster=request.cluster,
                             host=request.host)
    state.save()
    return results.data


def _boot_s(knee: dict[str, Any], ab: dict[str, Any], guess: float | None) -> float:
    """Boot time to the first generation: the A/B's boots when there are any (warm), else
    `guess`, else the knee's (the first boot of a machine may be cold and slower)."""
    times = [b["timings"].get("first_generation_s") for b in ab.get("boots", [])]
    times = [t for t in times if t] or [guess or ((knee.get("boot") or {}).get("timings")
                                                  or {}).get("first_generation_s") or 60.0]
    return float(sorted(times)[len(times) // 2])


def _rep_s(ab: dict[str, Any], guess: float) -> float:
    walls = [s["summary"].get("wall_s") for s in ab.get("samples", [])
             if not s.get("error") and s.get("summary")]
    walls = [w for w in walls if w]
    # wall_s is the measured part; the probe and building the prompts come before it.
    return float(sorted(walls)[len(walls) // 2]) + SETUP_S if walls else guess


def _ab(request: TuneRequest, state: TuneState, found: list[cands.Candidate],
        knee: dict[str, Any], say: Say) -> ResultsFile:
    names = [c.name for c in found]
    variants = {c.name: (c.base, dict(c.args)) for c in found if c.source != "recipe"}
    ab_request = AbRequest(request.recipe, names, "agents", request.reps, agent_params(request),
                           request.out / "ab-agents.json", request.port, host=request.host,
                           resume=True, trust=request.trust, reps_per_boot=request.reps,
                           rest_s=request.rest_s, variants=variants, cluster=request.cluster)
    if (state.data.get("plan") or {}).get("budget_s") not in (None, request.budget_s):
        say(f"a new budget ({request.budget_s:.0f} s): planning again")
        state.data.pop("plan")
    if "plan" not in state.data:
        est = Estimates(_boot_s(knee, {}, request.boot_estimate_s), request.rep_estimate_s,
                        request.rest_s)
        available = min(len(found), request.max_candidates or len(found))
        first = plan(request.budget_s - state.elapsed_s, est, available, request.reps,
                     request.sweep_points)
        state.set(plan={"candidates": first.candidates, "reps": first.reps,
                        "sweep_points": first.sweep_points, "estimate_s": round(first.seconds),
                        "fits": first.fits, "boot_s": est.boot_s, "rep_s": est.rep_s,
                        "budget_s": request.budget_s})
        say(f"budget {request.budget_s:.0f} s ({state.elapsed_s:.0f} s spent): "
            f"{first.candidates} of {len(found)} candidates x {first.reps} repetitions per "
            f"boot, up to {first.sweep_points} sweep points each (estimate "
            f"{first.seconds:.0f} s)" + ("" if first.fits else "; over budget even so"))
    chosen_plan = state.data["plan"]
    reps = int(chosen_plan["reps"])
    ab_request = replace(ab_request, reps=reps, reps_per_boot=reps,
                         profiles=names[:int(chosen_plan["candidates"])])
    results = open_results(ab_request)
    try:
        for index, candidate in enumerate(found[:int(chosen_plan["candidates"])]):
            _candidate(request, ab_request, state, results, knee, index, candidate, say)
    finally:
        results.finish("complete" if results.data["status"] == "running" else
                       results.data["status"])
    return results


def _candidate(request: TuneRequest, ab_request: AbRequest, state: TuneState,
               results: ResultsFile, knee: dict[str, Any], index: int,
               candidate: cands.Candidate, say: Say) -> None:
    name, reps = candidate.name, ab_request.reps
    todo = [r for r in range(reps) if (r, name) not in measured_pairs(results)]
    sweep_points = int(state.data["plan"]["sweep_points"])
    done = state.sweep(name)
    left = request.budget_s - state.elapsed_s
    est = Estimates(_boot_s(knee, results.data, request.boot_estimate_s),
                    _rep_s(results.data, request.rep_estimate_s), request.rest_s)
    wants_sweep = sweep_points > 0 and _sweep_open(request, results.data, name, done,
                                                   sweep_points)
    if not todo and not wants_sweep:
        return
    cost = candidate_cost(est, len(todo), sweep_points if wants_sweep else 0)
    measured = {s["profile"] for s in results.data["samples"] if not s.get("error")}
    if cost > left and len(measured - {name}) >= 2:
        say(f"{name}: skipped, {cost:.0f} s estimated and {left:.0f} s of the budget left")
        state.data.setdefault("skipped", []).append(name)
        state.save()
        return
    say(f"candidate {index + 1}: {name} ({candidate.why}); {left:.0f} s of the budget left")

    def after(boot: Boot) -> None:
        if sweep_points > 0:
            _sweep(request, state, results, boot, name, sweep_points, say)
        state.save()

    boot_and_measure(ab_request, results, index, name, todo, say, after=after)
    state.save()


def _sweep_open(request: TuneRequest, ab: dict[str, Any], name: str,
                done: list[dict[str, Any]], points: int) -> bool:
    met = met_at_target(ab["samples"], name)
    return met is not None and len(done) < points and \
        next_n(request.agents, met, done) is not None


def _sweep(request: TuneRequest, state: TuneState, results: ResultsFile, boot: Boot,
           name: str, points: int, say: Say) -> None:
    met = met_at_target(results.data["samples"], name)
    if met is None:
        return
    while len(done := state.sweep(name)) < points:
        n = next_n(request.agents, met, done)
        if n is None:
            break
        need = _rep_s(results.data, request.rep_estimate_s) * max(1.0, n / request.agents)
        if request.budget_s - state.elapsed_s < need:
            say(f"  {name}: sweep stopped before N={n}: about {need:.0f} s needed, "
                f"{request.budget_s - state.elapsed_s:.0f} s of the budget left")
            break
        say(f"  {name}: sweep N={n} (SLO {'met' if met else 'missed'} at {request.agents})")
        out = request.out / "sweep" / f"{name}-agents-{n}.json"
        try:
            point = run_point(boot, agent_params(request), n, out, say)
        except Sm121Error as exc:
            say(f"  {name}: sweep N={n} failed: {exc}")
            break
        state.add_sweep_point(name, point)
    state.data.setdefault("largest_n", {})[name] = largest_n(request.agents, met,
                                                              state.sweep(name))
    state.save()
