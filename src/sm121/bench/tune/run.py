"""`sm121 tune`: boot the recipe for its knee (shown, pricing nothing), build the one-knob
arms, measure each on one boot (its repetitions at the target N, one exclusive long prefill,
then a capacity bisection on the same boot), planning again before every boot from the
measured times, then rank by capacity, report, and write the `tuned` profile into the user's
recipe. Every step is saved in OUT/tune.json and OUT's results files, so a rerun with the
same arguments resumes.

This module is the order of those steps and what passes between them; each step is its own
module: the knee (tune/knee_step.py), the arms before any boot (tune/candidates.py,
tune/before_boot.py), their boots (tune/arm_boots.py, tune/after_runs.py), the confirmation
boots (tune/confirm_boots.py), the answer (tune/choose.py), the report (tune/report.py) and
the profile written (tune/tuned_profile.py, tune/recipe_write.py)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from sm121.bench.ab import AbRequest, open_results
from sm121.bench.results import ResultsFile, load_results
from sm121.bench.tune import candidates as cands
from sm121.bench.tune import conditions
from sm121.bench.tune.arm_boots import measure_arm, reference_alone
from sm121.bench.tune.before_boot import before_boot
from sm121.bench.tune.choose import choose
from sm121.bench.tune.cold_rate import said as said_rate
from sm121.bench.tune.confirm_boots import confirm
from sm121.bench.tune.files import AbFile
from sm121.bench.tune.knee_step import KneeFacts, measured_knee
from sm121.bench.tune.knobs import defaults_of, engine_of
from sm121.bench.tune.recipe_write import write_tuned
from sm121.bench.tune.report import write_report
from sm121.bench.tune.report_predicted import console as predicted_console
from sm121.bench.tune.request import TuneRequest, agent_params
from sm121.bench.tune.result import SittingRecord, TuneRecord
from sm121.bench.tune.state import TuneState
from sm121.bench.tune.tuned_profile import tuned_profile
from sm121.display import escape
from sm121.errors import Sm121Error
from sm121.plan.build import require_arms_trust
from sm121.plan.effective import profile_args
from sm121.plan.trust import trust_needs
from sm121.progress import Say
from sm121.recipes.loader import load_recipe


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
    knee = measured_knee(request, state, base, say)
    engine = engine_of(recipe.engine.kind)
    facts = KneeFacts.of(knee, engine.label)
    # made from the knee at every invocation, so a tune.json from before it was kept gets it
    state.record.cold_rate = facts.cold_rate
    state.changed("cold_rate")
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
    else:  # resumed: the predictions from here on (each arm's own) take the knee's rate
        say(said_rate(facts.cold_rate))
    found = [cands.Candidate.from_json(c) for c in state.record.candidates]
    say(f"candidates: {', '.join(c.name for c in found)}")
    ab = _measure_arms(request, state, found, facts, sitting, say)
    arms = AbFile.model_validate(ab.data)
    result = choose(request, state, found, arms, facts.engine, sitting, knee.first_prompt,
                    facts.fresh)
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


def _measure_arms(request: TuneRequest, state: TuneState, found: list[cands.Candidate],
                  knee: KneeFacts, sitting: SittingRecord, say: Say) -> ResultsFile:
    """Every arm in priority order, one boot each: its repetitions at the target N, then its
    capacity bisection on the same boot. Before every boot the plan is made again from what
    this tune has measured so far (boot and run times), for the arms still to measure. When
    every arm had its boot: the reference arm's exclusive long prefill where it lacks one, then
    the confirmation boots. The A/B's results file, finished."""
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
            if not measure_arm(request, ab_request, state, results, knee, index, arms, say):
                break
        else:
            reference_alone(request, ab_request, state, results, knee, arms, say)
            confirm(request, ab_request, state, results, knee, arms, sitting, say)
    finally:
        results.finish("complete" if results.data["status"] == "running" else
                       results.data["status"])
    return results
