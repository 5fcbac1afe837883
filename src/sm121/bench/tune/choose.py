"""From tune's measurements to its answer: per arm its capacity bracket (N*), goodput with
its Clopper-Pearson interval, the continuous metrics beside it, and the long prefill's cost
where it runs (the background job inside the agents runs, and the same prompt alone once per
boot, each against the reference arm of the same sitting); the ranking by capacity; the
and the claims (the `tuned` profile made from the answer is tune/tuned_profile.py's). No
number from the short-context knee prices anything here: a step's cost depends on the
context it attends to."""

from __future__ import annotations

from statistics import median

from sm121.bench.scenarios.agents.models import AgentsAbEntry, RunMetrics
from sm121.bench.stats import clopper_pearson
from sm121.bench.tune.candidates import Candidate, merged_args
from sm121.bench.tune.capacity import Bracket, bracket
from sm121.bench.tune.claims import claim
from sm121.bench.tune.files import AbFile
from sm121.bench.tune.first_prompt import CountedPrompt
from sm121.bench.tune.knobs import effective_step, engine_of
from sm121.bench.tune.pick import COST_TARGET, binding
from sm121.bench.tune.predict import predicted_for
from sm121.bench.tune.request import TuneRequest
from sm121.bench.tune.result import ArmRow, Probe, SittingRecord, TuneResult
from sm121.bench.tune.state import TuneState
from sm121.bench.tune.sweep import met_at_target
from sm121.memory.cold_start import FreshRate
from sm121.recipes.loader import load_recipe


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
           counted: CountedPrompt | None = None,
           fresh: FreshRate | None = None) -> TuneResult:
    """`ab`: the A/B of the arms; `engine`: the engine and version the sitting measured
    (conditions.engine_version of the knee's server); `sitting`: its device and date;
    `counted`: the first prompt the knee's engine counted (each arm's prediction from its own
    boot takes its working set from it); `fresh`: the knee's rate for a fresh prompt of that
    length (the same predictions' cold start)."""
    samples = ab.samples
    recipe = load_recipe(request.recipe).recipe
    adapter = engine_of(recipe.engine.kind)
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
        if (pred := predicted_for(request, samples, r.name, adapter, counted,
                                  fresh)) is not None:
            r.predicted = pred.predicted
            r.predicted_binding = pred.binding.value if pred.binding else None
        r.source, r.step = c.source, effective_step(merged_args(recipe, c), knobs)
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
