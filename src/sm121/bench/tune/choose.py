"""From tune's measurements to its answer: per arm its capacity bracket (N*), goodput with
its Clopper-Pearson interval, the continuous metrics beside it, and the long prefill's cost
where it runs (the background job inside the agents runs, and the same prompt alone once per
boot, each against the reference arm of the same sitting); the ranking by capacity; the
claims; and the `tuned` profile, each value's comment naming the run that set it. No number
from the short-context knee prices anything here: a step's cost depends on the context it
attends to."""

from __future__ import annotations

from pathlib import Path
from statistics import median

from pydantic import ValidationError

from sm121.bench.scenarios.agents.models import AgentsAbEntry, RunMetrics
from sm121.bench.stats import clopper_pearson
from sm121.bench.tune.candidates import Candidate
from sm121.bench.tune.capacity import Bracket, bracket
from sm121.bench.tune.claims import claim
from sm121.bench.tune.files import AbFile
from sm121.bench.tune.first_prompt import CountedPrompt
from sm121.bench.tune.knobs import effective_step, engine_of
from sm121.bench.tune.pick import COST_TARGET, binding
from sm121.bench.tune.predict import predicted_for
from sm121.bench.tune.recipe_write import TunedProfile
from sm121.bench.tune.request import TuneRequest
from sm121.bench.tune.result import ArmRow, Probe, SittingRecord, TuneResult
from sm121.bench.tune.state import TuneState
from sm121.bench.tune.sweep import met_at_target
from sm121.plan.effective import profile_args
from sm121.recipes.loader import load_recipe
from sm121.recipes.schema import ArgValue, MeasuredOn


def merged_args(recipe: str, candidate: Candidate) -> dict[str, ArgValue]:
    """The candidate's engine args: its base profile's (recipe args under them), its own on top."""
    return {**profile_args(load_recipe(recipe).recipe, candidate.base), **candidate.args}


def _kv(ab: AbFile) -> dict[str, int | None]:
    """Each arm's KV pool in tokens, as its boot reported it."""
    return {b.name: b.boot.kv_pool_tokens for b in ab.boots
            if b.name is not None and b.boot and b.boot.kv_pool_tokens}


def _runs(entries: list[AgentsAbEntry], name: str) -> list[tuple[str | None, RunMetrics]]:
    """(run id, headline metrics) of the arm's measured repetitions."""
    return [(e.run_id, e.metrics) for e in entries
            if e.profile == name and e.measured()]


def _median(values: list[float | None]) -> float | None:
    kept = [float(v) for v in values if v is not None]
    return median(kept) if kept else None


def capacity(entries: list[AgentsAbEntry], name: str, target: int, probes: list[Probe]
             ) -> Bracket:
    met = met_at_target(entries, name)
    outcomes = ([(target, met)] if met is not None else []) + \
        [(p.agents, p.slo_met) for p in probes]
    return bracket(outcomes)


def row(name: str, entries: list[AgentsAbEntry], target: int, probes: list[Probe]) -> ArmRow | None:
    runs = _runs(entries, name)
    if not runs:
        return None
    m = [metrics for _, metrics in runs]
    good = sum(x.good_turns or 0 for x in m)
    judged = sum(x.judged_turns or 0 for x in m)
    ci = clopper_pearson(good, judged) if judged else None
    ttft = _median([x.background_ttft_s for x in m])
    tokens = _median([x.background_prompt_tokens for x in m])
    found = capacity(entries, name, target, probes)
    return ArmRow(name=name, reps=len(runs), boots=sorted({r for r, _ in runs if r}),
                  goodput=_median([x.goodput for x in m]),
                  goodput_min=min((x.goodput for x in m if x.goodput is not None),
                                  default=None),
                  good_turns=good, judged_turns=judged, goodput_ci=ci,
                  ttft_p95_judged_s=_median([x.ttft_p95_judged_s for x in m]),
                  ttft_p95_during_background_s=_median(
                      [x.ttft_p95_during_background_s for x in m]),
                  decode_p50=_median([x.decode_p50 for x in m]),
                  background_ttft_s=ttft, background_prompt_tokens=tokens,
                  prefill_rate=tokens / ttft if tokens and ttft else None,
                  capacity=found.record(), probes=probes)


def price_prefill(table: list[ArmRow], reference: str | None) -> None:
    """Each arm's long-prefill cost against the reference arm of the same sitting, twice: in
    situ (its background job's TTFT inside the agents runs at the target N: what the job pays
    beside the agents) and exclusive (the median over its boots of the same prompt alone on
    the idle engine: the step budget's own price). The same tokens: the ratio of TTFTs is the
    inverse ratio of rates."""
    for r in table:
        r.exclusive_ttft_s = _median([e.ttft_s for e in r.exclusive])
    ref = next((r for r in table if r.name == reference), None)
    base = ref.background_ttft_s if ref else None
    alone = ref.exclusive_ttft_s if ref else None
    for r in table:
        r.prefill_reference = reference if base or alone else None
        r.prefill_cost = (r.background_ttft_s / base - 1
                          if base and r.background_ttft_s else None)
        r.exclusive_cost = (r.exclusive_ttft_s / alone - 1
                            if alone and r.exclusive_ttft_s else None)


def rank(table: list[ArmRow], bound: float = COST_TARGET) -> list[ArmRow]:
    """By capacity first (the bracket's lo, then its hi; no miss up to the top counts
    highest); within equal capacity, an arm whose prefill cost is over `bound` after one
    within it, then goodput's lower bound, then the lower cost.

    Capacity comes before the cost bound: with the bound first, the H200 sitting of
    2026-12-05 (docs/results/gpu-h200/tune-capacity) chose the reference arm, which missed
    the SLO at 4 agents, over arms holding 28. Every arm that admitted the agents during the
    long prefill paid 15-17% in situ there, so the bound ruled out every arm that served
    them. An arm over the bound is still chosen only when nothing within it holds as many
    agents; the report's pick says so (tune/report_arms.py)."""
    def key(r: ArmRow) -> tuple[int, int, int, float, float, str]:
        cap, cost = r.capacity, r.prefill_cost
        over = 1 if cost is not None and cost > bound else 0
        lower = r.goodput_ci[0] if r.goodput_ci else -1.0
        return (-cap.lo, -(cap.hi if cap.hi is not None else 10 ** 9), over, -lower,
                cost if cost is not None else float("inf"), r.name)

    return sorted(table, key=key)


def _boot_values(row: ArmRow, entries: list[AgentsAbEntry], target: int,
                 metric: str) -> dict[int, list[float]]:
    """N -> one value per boot (the boot's median at that N)."""
    per: dict[tuple[int, str], list[float]] = {}
    for run_id, metrics in _runs(entries, row.name):
        value = metrics.value(metric)
        if value is not None:
            per.setdefault((target, run_id or "?"), []).append(value)
    for p in row.probes + row.confirm:
        value = p.value(metric)
        if value is not None:
            per.setdefault((p.agents, p.run_id or "?"), []).append(value)
    out: dict[int, list[float]] = {}
    for (n, _), values in sorted(per.items()):
        out.setdefault(n, []).append(median(values))
    return out


def choose(request: TuneRequest, state: TuneState, found: list[Candidate],
           ab: AbFile, engine: str, sitting: SittingRecord,
           counted: CountedPrompt | None = None) -> TuneResult:
    """`ab`: the A/B of the arms; `engine`: the engine and version the sitting measured
    (conditions.engine_version of the knee's server); `sitting`: its device and date;
    `counted`: the first prompt the knee's engine counted (each arm's prediction from its own
    boot takes its working set from it)."""
    samples = ab.samples
    adapter = engine_of(load_recipe(request.recipe).recipe.engine.kind)
    knobs = adapter.scheduler
    table = [r for c in found if (r := row(c.name, samples, request.agents,
                                           state.sweep(c.name)))]
    for r in table:  # the finalists' confirmation runs at the second N (tune/confirm.py)
        r.confirm = state.confirmations(r.name)
        r.exclusive = state.exclusive(r.name)
    by_name = {c.name: c for c in found}
    reference = next((c.name for c in found if "reference" in c.role), None)
    price_prefill(table, reference)
    kv = _kv(ab)
    for r in table:
        c = by_name[r.name]
        r.kv_tokens, r.differs, r.role = kv.get(r.name), list(c.differs), list(c.role)
        if (pred := predicted_for(request, samples, r.name, adapter, counted)) is not None:
            r.predicted = pred.predicted
            r.predicted_binding = pred.binding.value if pred.binding else None
        r.source, r.step = c.source, effective_step(merged_args(request.recipe, c), knobs)
    ranked = rank(table)
    chosen = next((r.name for r in ranked if "defaults" not in r.role), None)
    baseline = next((c.name for c in found if "baseline" in c.role), None)
    claims = []
    base_row = next((r for r in table if r.name == baseline), None)
    for r in table:
        if base_row is None or r is base_row or "defaults" in r.role:
            continue
        claims.append(claim(r.name, baseline or "", _boot_values(
            r, samples, request.agents, "ttft_p95_judged_s"), _boot_values(
            base_row, samples, request.agents, "ttft_p95_judged_s"), r.differs))
    return TuneResult(table=table, ranking=[r.name for r in ranked], chosen=chosen,
                      baseline=baseline, reference=reference, claims=claims,
                      binding=binding(table), cost_bound=COST_TARGET,
                      device=sitting.device, engine=engine, date=sitting.date)


def _file(probe: Probe) -> str:
    """A probe's results file, relative to the tune's folder (as the report names it)."""
    return f"capacity/{Path(probe.results_file or '?').name}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


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
    alone = (f"; alone on the engine {_pct(r.exclusive_cost)} (median of "
             f"{r.exclusive_boots} boot(s))"
             if r.exclusive_cost is not None else "")
    prefill = (f"long prefill in the agents runs at N={request.agents}: "
               f"{r.prefill_rate or 0:,.0f} tok/s, {_pct(r.prefill_cost)} against "
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
    memory, runs = engine.memory, merged_args(request.recipe, chosen)
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
              f"Goodput {_pct(r.goodput)} at {request.agents} agents ({r.good_turns}/"
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
