"""The arms' boots, one per arm in priority order: before each, the plan made again from what
this tune has measured so far (tune/budget.py, tune/costs.py) for the arms still to measure,
and kept in tune.json; on it, the arm's repetitions at the target N (bench/ab.py) and then
what tune/after_runs.py measures. An arm a resumed tune.json shows half measured is booted
again for what it lacks: a bisection a call's end cut, or the reference arm's exclusive long
prefill. The plan decides whether the budget holds a boot; when it does not, the arms left
are skipped, each said with why."""

from __future__ import annotations

from dataclasses import replace

from sm121.bench.ab import AbRequest, boot_and_measure, measured_pairs
from sm121.bench.results import ResultsFile
from sm121.bench.tune.after_runs import exclusive, exclusive_then_bisection, record_capacity
from sm121.bench.tune.budget import STOP_S, plan
from sm121.bench.tune.candidates import Candidate
from sm121.bench.tune.costs import estimates, left_s
from sm121.bench.tune.files import AbFile
from sm121.bench.tune.knee_step import KneeFacts
from sm121.bench.tune.request import TuneRequest
from sm121.bench.tune.result import PlanRecord
from sm121.bench.tune.state import TuneState
from sm121.display import escape
from sm121.progress import Say


def measured_arms(results: ResultsFile) -> set[str]:
    """The arms with a run at the target N that did not fail."""
    return {s["profile"] for s in results.data["samples"] if not s.get("error")}


def measure_arm(request: TuneRequest, ab_request: AbRequest, state: TuneState,
                results: ResultsFile, knee: KneeFacts, index: int, arms: list[Candidate],
                say: Say) -> bool:
    """One arm's boot, planned from the measured costs; False when the budget is spent."""
    candidate = arms[index]
    name = candidate.name
    done = {rep for rep, profile in measured_pairs(results) if profile == name}
    if done and name not in state.record.capacity:
        # Its runs at the target N were measured, and the call ended during its bisection
        # (after_runs.bisect records a capacity whenever it returns): boot it again for the
        # rest.
        return finish_bisection(request, ab_request, state, results, knee, index, arms, say)
    if done or any(s["profile"] == name for s in results.data["samples"]):
        return True  # measured (or failed) in an earlier invocation: resume past it
    left = left_s(request, state)
    est = estimates(request, AbFile.model_validate(results.data), knee.boot_s)
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
    if not chosen.fits and len(measured_arms(results)) >= 2:
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
    after = exclusive_then_bisection(request, state, results, name, chosen.sweep_points, say,
                                     knee.first_prompt, knee.fresh)
    boot_and_measure(arm_request, results, index, name, list(range(chosen.reps)), say,
                     after=after)
    state.save()
    return True


def _below(state: TuneState) -> dict[str, str]:
    """The arms predicted below the target before any boot, with the reason."""
    return {name: p.below for name, p in state.record.predictions.items() if p.below}


def finish_bisection(request: TuneRequest, ab_request: AbRequest, state: TuneState,
                     results: ResultsFile, knee: KneeFacts, index: int,
                     arms: list[Candidate], say: Say) -> bool:
    """A boot of an arm whose bisection a call's end cut: the probes it has left, on a fresh
    boot of the same arguments (its runs at the target N stay those of its first boot).
    False when the budget no longer holds the boot and one probe."""
    name = arms[index].name
    est = estimates(request, AbFile.model_validate(results.data), knee.boot_s)
    left = left_s(request, state)
    probes = max(1, request.sweep_points - len(state.sweep(name)))
    need = est.boot_s + est.exclusive_s + est.rep_s + STOP_S
    if left < need:
        say(f"{name}: its bisection was cut and is not resumed: {left:.0f} s of the budget "
            f"left, a boot and a probe estimated at {need:.0f} s")
        record_capacity(request, state, results, name, say)  # what was tested
        return False
    say(f"arm {index + 1} of {len(arms)}: {name}: its bisection was cut by the end of a call; "
        f"booting it again for {probes} probe(s)")
    after = exclusive_then_bisection(request, state, results, name, probes, say,
                                     knee.first_prompt, knee.fresh)
    boot_and_measure(ab_request, results, index, name, [], say, after=after)
    state.save()
    return True


def reference_alone(request: TuneRequest, ab_request: AbRequest, state: TuneState,
                    results: ResultsFile, knee: KneeFacts, arms: list[Candidate],
                    say: Say) -> None:
    """A reference arm measured with no exclusive long prefill (a tune resumed from before
    tune measured one) prices no arm's: one boot of it for that alone, when the budget holds
    it (its runs stay those of its first boot)."""
    index = next((i for i, c in enumerate(arms) if "reference" in c.role), None)
    if index is None:
        return
    name = arms[index].name
    if state.exclusive(name) or name not in measured_arms(results):
        return
    est = estimates(request, AbFile.model_validate(results.data), knee.boot_s)
    need = est.boot_s + est.exclusive_s + STOP_S
    left = left_s(request, state)
    if left < need:
        say(f"{name}: no exclusive long prefill: {left:.0f} s of the budget left, a boot "
            f"needs about {need:.0f} s")
        return
    say(f"{name}: booting the reference arm again for its exclusive long prefill")
    boot_and_measure(ab_request, results, index, name, [], say,
                     after=lambda boot: exclusive(request, state, boot, name, say))
    state.save()
