"""`sm121 tune`: boot the recipe for its knee (shown, pricing nothing), build the one-knob
arms, measure each on one boot (its repetitions at the target N, one exclusive long prefill,
then a capacity bisection on the same boot), planning again before every boot from the
measured times, then rank by capacity, report, and write the `tuned` profile into the user's
recipe. Every step is saved in OUT/tune.json and OUT's results files, so a rerun with the
same arguments resumes."""

from __future__ import annotations

import shutil
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path

from sm121.bench.ab import AbRequest, boot_and_measure, measured_pairs, open_results
from sm121.bench.boot import Boot
from sm121.bench.results import ResultsFile, load_results
from sm121.bench.scenarios.agents.models import stored_summary
from sm121.bench.scenarios.knee.on_recipe import knee_on_recipe
from sm121.bench.tune import candidates as cands
from sm121.bench.tune import conditions
from sm121.bench.tune.before_boot import before_boot
from sm121.bench.tune.budget import STOP_S, Estimates, measured, plan
from sm121.bench.tune.capacity import next_probe, resolution_for
from sm121.bench.tune.choose import capacity, choose, tuned_profile
from sm121.bench.tune.confirm import finalists, next_boot, second_n
from sm121.bench.tune.exclusive import measure_exclusive
from sm121.bench.tune.files import AbFile, KneeFile
from sm121.bench.tune.first_prompt import CountedPrompt, count_on, said
from sm121.bench.tune.knobs import defaults_of, engine_of
from sm121.bench.tune.predict import predicted_for
from sm121.bench.tune.recipe_write import write_tuned
from sm121.bench.tune.report import write_report
from sm121.bench.tune.report_predicted import console as predicted_console
from sm121.bench.tune.request import TuneRequest, agent_params
from sm121.bench.tune.result import ConfirmPlan, PlanRecord, SittingRecord, TuneRecord
from sm121.bench.tune.state import TuneState
from sm121.bench.tune.sweep import run_point
from sm121.display import escape
from sm121.errors import Sm121Error
from sm121.plan.build import require_arms_trust
from sm121.plan.effective import profile_args
from sm121.plan.trust import trust_needs
from sm121.progress import Say
from sm121.recipes.loader import load_recipe
from sm121.safe_paths import file_under


def run_tune(request: TuneRequest, say: Say = lambda _: None) -> TuneRecord:
    """The tune, resumed where its tune.json stopped; tune.json as it ends, typed."""
    say = _one_line(say)
    state = TuneState(request.out, request.to_record(), fresh=request.fresh)
    try:
        _tune(request, state, say)
        return state.record
    finally:  # an interrupted tune keeps the time it spent (the budget counts it)
        state.save()


def _one_line(say: Say) -> Say:
    """tune's progress, a line at a time as display.escape shows it: the lines quote what a
    resumed tune.json holds (an arm's reason, why it was put last) and engines' errors, a
    stranger's strings, whose newline must not start a line of its own on the console."""
    return lambda line: say(escape(line, None))


def _tune(request: TuneRequest, state: TuneState, say: Say) -> None:
    loaded = load_recipe(request.recipe)
    recipe = loaded.recipe
    base = recipe.default_profile or next(iter(recipe.profiles))
    names = request.baselines if request.baselines else [base]
    missing = [n for n in names if n not in recipe.profiles]
    if missing:
        raise Sm121Error(f"--baselines: {', '.join(missing)} not a profile of {recipe.name}",
                         f"its profiles: {', '.join(recipe.profiles)}")
    if state.record.candidates is not None:  # arms read back from OUT/tune.json: checked
        require_arms_trust(request.recipe, {c.name: (c.base, dict(c.args))  # before a boot
                                            for c in state.record.candidates}, request.trust)
    sitting = _sitting(state)
    knee = _knee(request, state, base, say)
    engine = engine_of(recipe.engine.kind)
    facts = KneeFacts.of(knee, engine.label)
    if state.record.candidates is None:
        found_arms, dropped = cands.arms(
            names[0], {n: profile_args(recipe, n) for n in dict.fromkeys(names)},
            request.largest_n, engine.scheduler, memory=engine.memory,
            defaults=defaults_of(recipe.engine.kind))
        planned = before_boot(request, recipe, engine, knee, found_arms,
                              engine.known_flags(recipe))
        for line in planned.lines:
            say(line)
        state.record.candidates = [c.to_json() for c in planned.arms]
        state.record.dropped = dropped
        state.record.predictions = planned.predictions
        state.record.kv_arm = planned.kv_arm
        state.changed("predictions", "kv_arm")
    found = [cands.Candidate.from_json(c) for c in state.record.candidates]
    say(f"candidates: {', '.join(c.name for c in found)}")
    ab = _ab(request, state, found, facts, sitting, say)
    arms = AbFile.model_validate(ab.data)
    result = choose(request, state, found, arms, facts.engine, sitting, knee.first_prompt)
    state.record.result = result
    state.save()
    if not request.write:  # a profile an earlier invocation wrote is not this pick's
        state.forget("written", "serve_needs_trust")
    report = write_report(request.out, knee, arms, state.record)
    state.record.report = str(report)
    state.save()
    if request.write and result.chosen:
        text = _recipe_text(recipe.name, loaded.builtin, loaded.source)
        profile = tuned_profile(request, result, found, report)
        path = write_tuned(recipe.name, text, profile)
        needs = trust_needs(load_recipe(recipe.name).recipe, "tuned", builtin=False)
        # Shown as $SM121_HOME/..., so a committed report names no machine's folders.
        state.record.written = f"$SM121_HOME/recipes/{path.name}"
        state.record.serve_needs_trust = needs
        state.save()
        write_report(request.out, knee, arms, state.record)
        say(f"wrote profile `tuned` into {path}")
    state.record.status = "complete"
    state.save()


def predicted_lines(record: TuneRecord, out: Path) -> list[str]:
    """Per arm, its prediction against the bracket measured, or why it was not measured
    (tune/report_predicted.py): what `sm121 tune` prints after the arms."""
    path = out / "ab-agents.json"
    ab = AbFile.model_validate(load_results(path)) if path.is_file() else None
    return predicted_console(record, ab)


def _sitting(state: TuneState) -> SittingRecord:
    """The device and date of the tune's measurements: as recorded (by its first invocation,
    or in the result of a tune.json from before the record), else this machine, today."""
    record = state.record
    if record.sitting is None:
        result = record.result
        record.sitting = SittingRecord(device=result.device, date=result.date) if result \
            else SittingRecord(device=conditions.device(), date=conditions.today())
        state.save()
    return record.sitting


def _recipe_text(name: str, builtin: bool, source: str) -> str:
    if builtin:
        return resources.files("sm121.recipes").joinpath(f"builtin/{name}.yaml").read_text()
    return Path(source).read_text()


def _knee(request: TuneRequest, state: TuneState, base: str, say: Say) -> KneeFile:
    path = file_under(request.out, "knee.json")  # copied into: never through a link
    if request.knee_file is not None and not path.is_file():
        shutil.copyfile(request.knee_file, path)
    if path.is_file():
        knee = KneeFile.model_validate(load_results(path))
        if knee.status == "complete":
            say(f"knee: measured ({path})")
            return knee
    say(f"knee: booting {request.recipe} for the knee")

    def first_prompt(url: str) -> dict[str, object]:
        """While the knee's engine is up: the arms' predictions take the working set from
        what it counts (tune/first_prompt.py)."""
        counted = count_on(url, request.workload, request.turns or 6)
        say(f"knee: {said(counted)}")
        return {"first_prompt": counted.model_dump(mode="json")}

    results = knee_on_recipe(request.recipe, base, {}, request.knee_params, path, request.port,
                             trust=request.trust, say=say, cluster=request.cluster,
                             host=request.host, while_up=first_prompt)
    state.save()
    return KneeFile.model_validate(results.to_json())


@dataclass(frozen=True)
class KneeFacts:
    """What the arms' search reads of the knee's results file: its boot's time to a first
    generation (the boot estimate before an arm has booted), the engine it measured and the
    first prompt its engine counted (the predictions' working set)."""

    boot_s: float | None
    engine: str
    first_prompt: CountedPrompt | None = None

    @staticmethod
    def of(knee: KneeFile, engine: str) -> KneeFacts:
        """`engine`: the recipe's engine, as its adapter names it."""
        boot = knee.boot.timings.first_generation_s if knee.boot else None
        return KneeFacts(boot, conditions.engine_version(knee.server.version, engine),
                         knee.first_prompt)


def _estimates(request: TuneRequest, knee: KneeFacts | None, ab: AbFile) -> Estimates:
    """From the A/B's boots and runs so far; before the first boot, --boot-estimate, else
    the knee's boot (the machine's first boot may be cold and slower)."""
    boots = [t for b in ab.boots if (t := b.timings.first_generation_s) is not None]
    walls = [w for s in ab.samples
             if not s.error and (w := stored_summary(s).wall_s) is not None]
    # The exclusive prefill costs about what the background job's prefill took in the runs
    prefills = [t for s in ab.samples if s.measured() and (t := s.metrics.background_ttft_s)]
    knee_boot = knee.boot_s if knee else None
    return measured(boots, walls, request.boot_estimate_s or knee_boot or 60.0,
                    request.rep_estimate_s, request.rest_s, prefills)


def _ab(request: TuneRequest, state: TuneState, found: list[cands.Candidate],
        knee: KneeFacts, sitting: SittingRecord, say: Say) -> ResultsFile:
    """Every arm in priority order, one boot each: its repetitions at the target N, then its
    capacity bisection on the same boot. Before every boot the plan is made again from what
    this tune has measured so far (boot and run times), for the arms still to measure."""
    arms = found[:request.max_candidates or len(found)]
    names = [c.name for c in arms]
    variants = {c.name: (c.base, dict(c.args)) for c in arms}
    ab_request = AbRequest(request.recipe, names, "agents", request.reps,
                           agent_params(request).model_dump(),
                           request.out / "ab-agents.json", request.port, host=request.host,
                           resume=True, trust=request.trust, reps_per_boot=request.reps,
                           rest_s=request.rest_s, variants=variants, cluster=request.cluster)
    results = open_results(ab_request)
    try:
        for index in range(len(arms)):
            if not _arm(request, ab_request, state, results, knee, index, arms, say):
                break
        else:
            _reference_alone(request, ab_request, state, results, knee, arms, say)
            _confirm(request, ab_request, state, results, knee, arms, sitting, say)
    finally:
        results.finish("complete" if results.data["status"] == "running" else
                       results.data["status"])
    return results


def _measured(results: ResultsFile) -> set[str]:
    return {s["profile"] for s in results.data["samples"] if not s.get("error")}


def _arm(request: TuneRequest, ab_request: AbRequest, state: TuneState, results: ResultsFile,
         knee: KneeFacts, index: int, arms: list[cands.Candidate], say: Say) -> bool:
    """One arm's boot, planned from the measured costs; False when the budget is spent."""
    candidate = arms[index]
    name = candidate.name
    done = {rep for rep, profile in measured_pairs(results) if profile == name}
    if done and name not in state.record.capacity:
        # Its runs at the target N were measured, and the call ended during its bisection
        # (_bisect records a capacity whenever it returns): boot it again for the rest.
        return _finish_bisection(request, ab_request, state, results, knee, index, arms, say)
    if done or any(s["profile"] == name for s in results.data["samples"]):
        return True  # measured (or failed) in an earlier invocation: resume past it
    left = request.budget_s - state.elapsed_s
    est = _estimates(request, knee, AbFile.model_validate(results.data))
    remaining = len(arms) - index
    below = _below(state)
    # The arms predicted below the target come last (tune/before_boot.py) and get what the
    # others leave: the plan for an arm ahead of them counts only the arms ahead.
    ahead = sum(1 for c in arms[index:] if c.name not in below)
    share = ahead if name not in below and ahead else remaining
    chosen = plan(left, est, share, request.reps, request.sweep_points, least=1)
    state.record.plans.append(PlanRecord(
        before=name, left_s=round(left), boot_s=round(est.boot_s, 1),
        rep_s=round(est.rep_s, 1), arms_left=remaining, arms=chosen.candidates,
        reps=chosen.reps, probes=chosen.sweep_points, fits=chosen.fits,
        estimate_s=round(chosen.seconds)))
    state.changed("plans")
    if not chosen.fits and len(_measured(results)) >= 2:
        why = (f"{left:.0f} s of the budget left and one boot estimated at "
               f"{chosen.seconds:.0f} s")
        for c in arms[index:]:
            say(f"dropped {c.name}: {escape(below[c.name])}; {why}" if c.name in below else
                f"{c.name}: not measured, {why}")
        state.record.skipped.extend(c.name for c in arms[index:])
        state.changed("skipped")
        return False
    last = f" (measured last: {escape(below[name])})" if name in below else ""
    say(f"arm {index + 1} of {len(arms)}: {name}{last} ({escape(candidate.why)}); {left:.0f} s "
        f"left, plan {chosen.candidates} arm(s) x {chosen.reps} reps + {chosen.sweep_points} probes "
        f"(boot {est.boot_s:.0f} s, run {est.rep_s:.0f} s measured so far)")
    arm_request = replace(ab_request, reps=chosen.reps, reps_per_boot=chosen.reps)

    def after(boot: Boot) -> None:
        _exclusive(request, state, boot, name, say)
        _bisect(request, state, results, boot, name, chosen.sweep_points, say,
                knee.first_prompt)

    boot_and_measure(arm_request, results, index, name, list(range(chosen.reps)), say,
                     after=after)
    state.save()
    return True


def _below(state: TuneState) -> dict[str, str]:
    """The arms predicted below the target before any boot, with the reason."""
    return {name: p.below for name, p in state.record.predictions.items() if p.below}


def _finish_bisection(request: TuneRequest, ab_request: AbRequest, state: TuneState,
                      results: ResultsFile, knee: KneeFacts, index: int,
                      arms: list[cands.Candidate], say: Say) -> bool:
    """A boot of an arm whose bisection a call's end cut: the probes it has left, on a fresh
    boot of the same arguments (its runs at the target N stay those of its first boot).
    False when the budget no longer holds the boot and one probe."""
    name = arms[index].name
    est = _estimates(request, knee, AbFile.model_validate(results.data))
    left = request.budget_s - state.elapsed_s
    probes = max(1, request.sweep_points - len(state.sweep(name)))
    need = est.boot_s + est.exclusive_s + est.rep_s + STOP_S
    if left < need:
        say(f"{name}: its bisection was cut and is not resumed: {left:.0f} s of the budget "
            f"left, a boot and a probe estimated at {need:.0f} s")
        _record_capacity(request, state, results, name, say)  # what was tested
        return False
    say(f"arm {index + 1} of {len(arms)}: {name}: its bisection was cut by the end of a call; "
        f"booting it again for {probes} probe(s)")

    def after(boot: Boot) -> None:
        _exclusive(request, state, boot, name, say)
        _bisect(request, state, results, boot, name, probes, say, knee.first_prompt)

    boot_and_measure(ab_request, results, index, name, [], say, after=after)
    state.save()
    return True


def _reference_alone(request: TuneRequest, ab_request: AbRequest, state: TuneState,
                     results: ResultsFile, knee: KneeFacts, arms: list[cands.Candidate],
                     say: Say) -> None:
    """A reference arm measured with no exclusive long prefill (a tune resumed from before
    tune measured one) prices no arm's: one boot of it for that alone, when the budget holds
    it (its runs stay those of its first boot)."""
    index = next((i for i, c in enumerate(arms) if "reference" in c.role), None)
    if index is None:
        return
    name = arms[index].name
    if state.exclusive(name) or name not in _measured(results):
        return
    est = _estimates(request, knee, AbFile.model_validate(results.data))
    need = est.boot_s + est.exclusive_s + STOP_S
    left = request.budget_s - state.elapsed_s
    if left < need:
        say(f"{name}: no exclusive long prefill: {left:.0f} s of the budget left, a boot "
            f"needs about {need:.0f} s")
        return
    say(f"{name}: booting the reference arm again for its exclusive long prefill")
    boot_and_measure(ab_request, results, index, name, [], say,
                     after=lambda boot: _exclusive(request, state, boot, name, say))
    state.save()


def _exclusive(request: TuneRequest, state: TuneState, boot: Boot, name: str,
               say: Say) -> None:
    """The boot's exclusive long prefill (tune/exclusive.py), right after its runs at the
    target N, while the engine is idle."""
    found = measure_exclusive(boot, agent_params(request), say)
    if found is not None:
        state.add_exclusive(name, found)


def _bisect(request: TuneRequest, state: TuneState, results: ResultsFile, boot: Boot,
            name: str, probes: int, say: Say, counted: CountedPrompt | None = None) -> None:
    """The capacity bisection on this boot: one agents run per N, at most `probes` of them,
    each only when the budget still holds it; about 0.9x and 1.1x of the arm's predicted
    capacity first (bench/tune/predict.py), when its pool is known."""
    engine = engine_of(load_recipe(request.recipe).recipe.engine.kind)
    pred = predicted_for(request, AbFile.model_validate(results.data).samples, name, engine,
                         counted)
    if pred is not None:
        say(f"  {name}: predicted: {pred.headline()}")
    for _ in range(probes):
        done = state.sweep(name)
        found = capacity(AbFile.model_validate(results.data).samples, name, request.agents, done)
        if not found.tested:
            return  # no verdict at the target N (its runs failed)
        n = next_probe(found.tested, request.largest_n, resolution_for(request.agents),
                       pred.predicted if pred is not None else None)
        if n is None:
            break
        est = _estimates(request, None, AbFile.model_validate(results.data))
        need = est.rep_s * max(1.0, n / request.agents)
        if request.budget_s - state.elapsed_s < need:
            say(f"  {name}: bisection stopped before N={n}: about {need:.0f} s needed, "
                f"{request.budget_s - state.elapsed_s:.0f} s of the budget left")
            break
        say(f"  {name}: capacity {found.text}; probing N={n}")
        out = file_under(request.out, "capacity", f"{name}-agents-{n}.json")
        try:
            point = run_point(boot, agent_params(request), n, out, say)
        except Sm121Error as exc:
            say(f"  {name}: N={n} failed: {exc}")
            break
        state.add_sweep_point(name, point)
    _record_capacity(request, state, results, name, say)


def _record_capacity(request: TuneRequest, state: TuneState, results: ResultsFile, name: str,
                     say: Say) -> None:
    found = capacity(AbFile.model_validate(results.data).samples, name, request.agents, state.sweep(name))
    state.record.capacity[name] = found.record()
    say(f"  {name}: capacity {found.text}")
    state.changed("capacity")


def _boots_of(results: ResultsFile, name: str) -> int:
    return len({s.get("boot_index") for s in results.data["samples"] if s["profile"] == name})


def _confirm(request: TuneRequest, ab_request: AbRequest, state: TuneState,
             results: ResultsFile, knee: KneeFacts, arms: list[cands.Candidate],
             sitting: SittingRecord, say: Say) -> None:
    """The budget left after every arm: more boots of the two finalists, interleaved, each
    one run at the target N and one at a second N, up to --boots boots per finalist."""
    if request.boots <= 1:
        return
    result = choose(request, state, arms, AbFile.model_validate(results.data), knee.engine,
                    sitting, knee.first_prompt)
    defaults = {c.name for c in arms if "defaults" in c.role}
    pair = finalists(result.ranking, result.baseline, defaults)
    if len(pair) < 2:
        return
    rows = {r.name: r for r in result.table}
    other = second_n(request.agents, [rows[n].capacity for n in pair])
    state.record.confirm_plan = ConfirmPlan(finalists=pair, second_n=other, boots=request.boots)
    state.save()
    say(f"confirming {pair[0]} against {pair[1]}: up to {request.boots} boots each, "
        f"N={request.agents}" + (f" and N={other}" if other else ""))
    while (name := next_boot({n: _boots_of(results, n) for n in pair}, pair,
                             request.boots)) is not None:
        est = _estimates(request, knee, AbFile.model_validate(results.data))
        need = est.boot_s + est.exclusive_s + est.rep_s * (2 if other else 1) + STOP_S
        left = request.budget_s - state.elapsed_s
        if left < need:
            say(f"confirmation stopped: {left:.0f} s of the budget left, a boot needs about "
                f"{need:.0f} s")
            break
        rep = 1 + max((int(s["rep"]) for s in results.data["samples"]
                       if s["profile"] == name), default=-1)
        index = 1 + max((int(s.get("boot_index") or 0) for s in results.data["samples"]),
                        default=-1)
        say(f"confirmation boot {_boots_of(results, name) + 1} of {name}")

        def after(boot: Boot, name: str = name, index: int = index) -> None:
            _exclusive(request, state, boot, name, say)
            if other is None:
                return
            out = file_under(request.out, "confirm", f"{name}-boot-{index}-agents-{other}.json")
            try:
                point = run_point(boot, agent_params(request), other, out, say)
            except Sm121Error as exc:
                say(f"  {name}: N={other} failed: {exc}")
                return
            state.add_confirmation(name, point)

        boot_and_measure(replace(ab_request, reps=1, reps_per_boot=1), results, index, name,
                         [rep], say, after=after)
        state.save()
