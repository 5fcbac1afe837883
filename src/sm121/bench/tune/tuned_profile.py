"""The `tuned` profile made from tune's answer (tune/choose.py): the chosen arm's args, only
what was measured, each value's comment naming the run (boot, results file) that set it, a
header naming the sitting and the report, and `measured_on`, the pool it holds for. Apart
from the choice because it is what the user's recipe keeps (tune/recipe_write.py writes it),
not what tune.json or the report read."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from sm121.bench.tune.candidates import Candidate, merged_args
from sm121.bench.tune.knobs import engine_of
from sm121.bench.tune.recipe_write import TunedProfile
from sm121.bench.tune.request import TuneRequest
from sm121.bench.tune.result import ArmRow, Probe, TuneResult
from sm121.bench.tune.shown import pct
from sm121.recipes.loader import load_recipe
from sm121.recipes.schema import MeasuredOn


def _file(probe: Probe) -> str:
    """A probe's results file, relative to the tune's folder (as the report names it)."""
    return f"capacity/{Path(probe.results_file or '?').name}"


def _ci(r: ArmRow) -> str:
    ci = r.goodput_ci
    return f"[{ci[0]:.1%}, {ci[1]:.1%}]" if ci else "[-]"


def tuned_profile(request: TuneRequest, result: TuneResult, found: list[Candidate],
                  report: Path) -> TunedProfile:
    """The chosen arm as profile `tuned`: only what was measured, each value's comment naming
    the run (boot, results file) that set it."""
    chosen = next(c for c in found if c.name == result.chosen)
    r = next(x for x in result.table if x.name == chosen.name)
    recipe = load_recipe(request.recipe).recipe
    engine = engine_of(recipe.engine.kind)
    knobs = engine.scheduler
    args = {**recipe.profiles[chosen.base].args, **chosen.args}
    boots = ", ".join(r.boots) or "?"
    cap = r.capacity
    probes = "; ".join(f"N={p.agents} {'met' if p.slo_met else 'missed'} "
                       f"({_file(p)})" for p in r.probes)
    capacity_text = (f"capacity {cap.text} on boot {boots} (N={request.agents}: "
                     f"{r.reps} runs in ab-agents.json{'; ' + probes if probes else ''})")
    ref = r.prefill_reference
    alone = (f"; alone on the engine {pct(r.exclusive_cost)} (median of "
             f"{r.exclusive_boots} boot(s))"
             if r.exclusive_cost is not None else "")
    prefill = (f"long prefill in the agents runs at N={request.agents}: "
               f"{r.prefill_rate or 0:,.0f} tok/s, {pct(r.prefill_cost)} against "
               f"reference arm {ref}{alone}" if ref else
               "long prefill cost not priced (the reference arm was not measured)")
    differs = ("the baseline" if not chosen.differs else
               "differs from the baseline in " + ", ".join(chosen.differs))
    arm = f"arm {chosen.name} ({differs})"
    step_knobs = (knobs.batched_tokens, knobs.long_prefill_threshold, knobs.micro_batch)
    comments = {name: f"{arm}; {capacity_text}; {prefill}" for name in step_knobs if name}
    comments[knobs.max_num_seqs] = (
        f"holds {request.largest_n} agents (the most the capacity search may test; it tested up "
        f"to {_tested(r)} on boot {boots}) and the background job")
    memory, runs = engine.memory, merged_args(recipe, chosen)
    each = memory.per_request_context(runs)
    if each is not None and memory.splits_context(runs):  # grown with the sequences
        comments[memory.max_model_len] = (f"{each:,} tokens for each of the "
                                          f"{runs.get(knobs.max_num_seqs)} sequences")
    if knobs.max_num_seqs in chosen.differs:  # the seqs-alone arm: its value is the finding
        comments[knobs.max_num_seqs] = f"{arm}; {capacity_text}"
    for name in chosen.differs:  # a knob beyond the scheduler's (the fp8 KV arm's dtype)
        comments.setdefault(name, f"{arm}; {capacity_text}; {chosen.why}")
    notes = {name: (comments[name] if name in comments and name in chosen.args else
                    f"from profile {chosen.base}; {comments[name]}" if name in comments else
                    f"from profile {chosen.base}, unchanged") for name in args}
    header = [f"Chosen by sm121 tune, ranked by capacity N* (ranking: "
              f"{', '.join(result.ranking)}): {chosen.name}, {chosen.why}.",
              f"Sitting: {result.device}, {result.engine}, {result.date}; "
              f"{len({b for x in result.table for b in x.boots})} boots; "
              f"report {report}.",
              f"Goodput {pct(r.goodput)} at {request.agents} agents ({r.good_turns}/"
              f"{r.judged_turns} judged turns, 95% interval {_ci(r)}), {request.workload}, "
              f"{request.slo}."]
    return TunedProfile(f"{chosen.name} chosen by sm121 tune for {request.workload} at "
                        f"{request.slo}: {cap.text}", args, notes, header,
                        _measured_on(result.device, r, request.workload))


def _measured_on(device: str, r: ArmRow, workload: str) -> MeasuredOn | None:
    """The record plan and serve compare a pool with; None when the boot logged no pool or
    a name would not pass the recipe's own check (a stranger's device string)."""
    if not r.kv_tokens:
        return None
    try:
        return MeasuredOn(device=device, pool_tokens=r.kv_tokens, workload=workload,
                          agents=r.capacity.lo or None)
    except ValidationError:
        return None


def _tested(r: ArmRow) -> int:
    return max((n for n, _ in r.capacity.tested), default=0)
