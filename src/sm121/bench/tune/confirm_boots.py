"""The confirmation boots: what the budget left after every arm buys, spent on more boots of
the two finalists that tune/confirm.py names, interleaved, each one run at the target N (its
exclusive long prefill after it) and one at the second N, so that "A beats B" is tested over
boots (tune/claims.py). Each boot only while the budget, as measured so far, still holds it."""

from __future__ import annotations

from dataclasses import replace

from sm121.bench.ab import AbRequest, boot_and_measure
from sm121.bench.boot import Boot
from sm121.bench.results import ResultsFile
from sm121.bench.tune.after_runs import exclusive
from sm121.bench.tune.budget import STOP_S
from sm121.bench.tune.candidates import Candidate
from sm121.bench.tune.choose import choose
from sm121.bench.tune.confirm import finalists, next_boot, second_n
from sm121.bench.tune.costs import estimates, left_s
from sm121.bench.tune.files import AbFile
from sm121.bench.tune.knee_step import KneeFacts
from sm121.bench.tune.request import TuneRequest, agent_params
from sm121.bench.tune.result import ConfirmPlan, SittingRecord
from sm121.bench.tune.state import TuneState
from sm121.bench.tune.sweep import run_point
from sm121.errors import Sm121Error
from sm121.progress import Say
from sm121.safe_paths import file_under


def _boots_of(results: ResultsFile, name: str) -> int:
    return len({s.get("boot_index") for s in results.data["samples"] if s["profile"] == name})


def confirm(request: TuneRequest, ab_request: AbRequest, state: TuneState,
            results: ResultsFile, knee: KneeFacts, arms: list[Candidate],
            sitting: SittingRecord, say: Say) -> None:
    """The budget left after every arm: more boots of the two finalists, interleaved, each
    one run at the target N and one at a second N, up to --boots boots per finalist."""
    if request.boots <= 1:
        return
    result = choose(request, state, arms, AbFile.model_validate(results.data), knee.engine,
                    sitting, knee.first_prompt, knee.fresh)
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
        est = estimates(request, AbFile.model_validate(results.data), knee.boot_s)
        need = est.boot_s + est.exclusive_s + est.rep_s * (2 if other else 1) + STOP_S
        left = left_s(request, state)
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
            exclusive(request, state, boot, name, say)
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
