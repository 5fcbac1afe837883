"""`ab`: serve each profile of a recipe as `sm121 serve` does (sm121.serving: here, or on a
cluster's nodes), run one scenario on it, stop it, and compare. The order alternates between
boots (A B, then B A) so that a slow drift of a shared machine does not favour one profile;
medians and spread per metric.

With `reps_per_boot` N > 1 one boot measures N repetitions, `rest_s` apart. Each repetition
is salted of its own (the scenario's client draws a fresh salt per run, and prompts carry it
in their first block and in `cache_salt`), so the prefix cache a repetition left cannot serve
the next. The boot is recorded apart (`boots`), and `boot_effect` tests whether the second
repetition on a boot differs systematically from the first."""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sm121.bench.boot import Boot, booted, steps
from sm121.bench.report.compare import compare_with
from sm121.bench.result_models import AbEntry, Envelope, Open
from sm121.bench.results import ResultsFile
from sm121.bench.runner import Target, run_scenario
from sm121.bench.scenarios import get
from sm121.errors import Sm121Error
from sm121.progress import Say
from sm121.recipes.schema import ArgValue
from sm121.safe_paths import file_under


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
    reps_per_boot: int = 1
    cluster: str | None = None  # a cluster file: each boot serves the plan on its nodes
    rest_s: float = 0.0  # pause between repetitions on one boot
    # A name measured as a profile that is not in the recipe: (base profile, engine args).
    variants: dict[str, tuple[str, dict[str, ArgValue]]] = field(default_factory=dict)
    api: str | None = None  # --api: the protocol the scenario speaks (None: its own)
    # A name measured from another recipe than `recipe` (a cross-engine A/B: RECIPE:PROFILE).
    recipes: dict[str, str] = field(default_factory=dict)


def cross_recipe(pairs: str) -> tuple[str, list[str], dict[str, str],
                                      dict[str, tuple[str, dict[str, ArgValue]]]]:
    """`tiny-cpu:agent,tiny-llamacpp:agent`: each name a RECIPE:PROFILE of its own recipe (the
    same workload on two engines). The first recipe is the A/B's `recipe`; each name maps to
    its recipe and its profile (a variant with no args of its own)."""
    names = [p.strip() for p in pairs.split(",") if p.strip()]
    bad = [n for n in names if n.count(":") != 1 or not all(n.split(":"))]
    if len(names) < 2 or bad:
        raise Sm121Error(f"cannot read {pairs!r} as RECIPE:PROFILE pairs",
                         "example: sm121 bench ab tiny-cpu:agent,tiny-llamacpp:agent")
    recipes = {n: n.split(":")[0] for n in names}
    variants: dict[str, tuple[str, dict[str, ArgValue]]] = {
        n: (n.split(":")[1], {}) for n in names}
    return recipes[names[0]], names, recipes, variants


def boot_order(profiles: list[str], reps: int, per_boot: int = 1
               ) -> list[tuple[int, str, list[int]]]:
    """(boot, profile, its repetitions) in run order: forward on even boots, reversed on odd
    ones (with one repetition per boot, A B then B A between repetitions)."""
    boots = math.ceil(reps / max(1, per_boot))
    return [(b, p, list(range(b * per_boot, min(reps, (b + 1) * per_boot))))
            for b in range(boots)
            for p in (profiles if b % 2 == 0 else list(reversed(profiles)))]


def pair_order(request: AbRequest) -> list[tuple[int, str]]:
    """(rep, profile) in the order they are measured: each boot's repetitions together."""
    return [(rep, profile)
            for _, profile, reps in boot_order(request.profiles, request.reps,
                                               request.reps_per_boot)
            for rep in reps]


def run_ab(request: AbRequest, say: Say = lambda _: None) -> ResultsFile:
    """Every (boot, profile) in alternating order, each boot measuring its repetitions. A boot
    or scenario that fails is recorded with its error and the A/B goes on; with `resume`,
    pairs already measured are skipped (a boot whose repetitions are all measured is not
    booted again)."""
    results = open_results(request)
    order = boot_order(request.profiles, request.reps, request.reps_per_boot)
    with results.recording():
        for index, (boot, profile, reps) in enumerate(order):
            todo = [r for r in reps if (r, profile) not in measured_pairs(results)]
            if not todo:
                continue
            say(f"[boot {index + 1}/{len(order)}] profile {profile}, repetitions "
                f"{', '.join(str(r + 1) for r in todo)}")
            boot_and_measure(request, results, boot, profile, todo, say)
    return results


def open_results(request: AbRequest) -> ResultsFile:
    """The A/B's results file, new or (with `resume`) as left; `boots` lists every boot. A
    resumed file is typed where it is read (`results.load_results`: its profiles are
    names.AbProfile) and checked to be this A/B's before anything is written or booted."""
    results = ResultsFile(request.out, "ab", request.scenario, {
        "recipe": request.recipe, "profiles": request.profiles, "reps": request.reps,
        "recipes": request.recipes,
        "reps_per_boot": request.reps_per_boot, "rest_s": request.rest_s,
        "variants": {k: {"profile": b, "args": a} for k, (b, a) in request.variants.items()},
        "overrides": request.overrides, "scenario_params": request.params,
        "order": [f"{rep}:{p}" for rep, p in pair_order(request)]},
        resume=request.resume, check=lambda data: _check_resumed(data, request))
    results.data.setdefault("boots", [])
    return results


def _check_resumed(found: Envelope, request: AbRequest) -> None:
    """What it says was measured is skipped: only when it is an A/B of this recipe and
    scenario (its samples and profiles were typed by load_results)."""
    if found.kind != "ab" or (getattr(found.params, "recipe", None), found.scenario) != (
            request.recipe, request.scenario):
        raise Sm121Error(f"{request.out} is not an A/B of {request.recipe} ({request.scenario})",
                         "pass the same recipe and scenario to resume, or another --out")


def measured_pairs(results: ResultsFile) -> set[tuple[int, str]]:
    return {(s["rep"], s["profile"]) for s in results.data["samples"] if not s.get("error")}


def boot_and_measure(request: AbRequest, results: ResultsFile, boot_index: int, profile: str,
                     reps: list[int], say: Say,
                     after: Callable[[Boot], None] | None = None) -> None:
    """One boot of `profile`, its repetitions in order, then `after` (more work on the same
    boot); samples and the boot record are saved as they come."""
    base, args = request.variants.get(profile, (profile, {}))
    try:
        recipe = request.recipes.get(profile, request.recipe)
        with booted(recipe, base, {**request.overrides, **args}, request.port,
                    request.host, request.trust, say=lambda m: say(f"  {profile}: {m}"),
                    cluster=request.cluster) as boot:
            results.data["boots"].append({**boot.record.to_json(), "name": profile,
                                          "boot_index": boot_index})
            results.save()
            for k, rep in enumerate(reps):
                if k:
                    say(f"  {profile}: resting {request.rest_s:g} s")
                    time.sleep(request.rest_s)
                _add(request, results, _measure_or_record(request, boot, profile, rep, say),
                     boot_index, k)
            if after is not None:
                after(boot)
    except Exception as exc:  # one bad boot must not lose the other profiles' results
        say(f"  {profile}: failed: {exc}")
        done = measured_pairs(results)
        for k, rep in enumerate(reps):
            if (rep, profile) not in done:
                failed = AbEntry[Any, Open](profile=profile, rep=rep, error=str(exc), metrics=Open())
                _add(request, results, failed, boot_index, k)


def _add(request: AbRequest, results: ResultsFile, entry: AbEntry[Any, Open], boot: int,
         rep_on_boot: int) -> None:
    entry.boot_index, entry.rep_on_boot = boot, rep_on_boot
    results.add_sample(entry.to_json())
    spec = get(request.scenario)
    entries = [spec.ab_entry(s) for s in results.data["samples"]]
    measured = [e for e in entries if not e.error]
    results.set(summary=compare_with(spec, measured, request.profiles).to_json())


def _measure_or_record(request: AbRequest, boot: Boot, profile: str, rep: int, say: Say
                       ) -> AbEntry[Any, Open]:
    try:
        return measure_on_boot(request, boot, profile, rep, say)
    except Exception as exc:  # a failed repetition; the next one may still measure
        say(f"  {profile}: repetition {rep + 1} failed: {exc}")
        return AbEntry[Any, Open](profile=profile, rep=rep, run_id=boot.run_id, error=str(exc),
                                  metrics=Open())


def measure_on_boot(request: AbRequest, boot: Boot, profile: str, rep: int, say: Say
                    ) -> AbEntry[Any, Open]:
    """One repetition of the scenario on a served engine (its own results file)."""
    sub_out = file_under(request.out.with_suffix(""), f"{profile}-rep{rep + 1}.json")
    spec = get(request.scenario)
    say(f"  {profile}: ready, running {request.scenario} (repetition {rep + 1})")
    run = asyncio.run(run_scenario(
        spec, Target(boot.plan.base_url, boot.plan.readiness.model, api=request.api or spec.api),
        {**request.params, "reps": 1}, sub_out, progress=steps(say, f"  {profile}: ")))
    record, data = boot.record.to_json(), run.to_json()
    return AbEntry[Any, Open].model_validate({
        "profile": profile, "rep": rep, "run_id": boot.run_id,
        "engine_args": record["engine_args"], "boot": record["boot"],
        "timings": record["timings"],
        "results_file": str(sub_out), "server": data["server"],
        "probe": data.get("probe"), "samples": data["samples"], "summary": data["summary"],
        "metrics": spec.headline_metrics(run.samples)})

