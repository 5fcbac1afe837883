"""From tune's measurements to its answer: the table of candidates (goodput over the
repetitions, the knee's prefill cost of each one's step, its boot's KV pool, its largest N),
the ranking, the bound that binds, and the `tuned` profile with a comment per value."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sm121.bench.knee_math import prefill_cost, rate_at
from sm121.bench.tune import conditions
from sm121.bench.tune.candidates import Candidate
from sm121.bench.tune.knobs import effective_step, knobs_of
from sm121.bench.tune.pick import binding, rank, rows
from sm121.bench.tune.recipe_write import TunedProfile
from sm121.bench.tune.request import TuneRequest
from sm121.bench.tune.state import TuneState
from sm121.bench.tune.sweep import largest_n, met_at_target
from sm121.plan.effective import profile_args
from sm121.recipes.loader import load_recipe
from sm121.recipes.schema import ArgValue

REFERENCE_STEP = 8192  # the field's batch-8192: what a background prefill's cost is against


def merged_args(recipe: str, candidate: Candidate) -> dict[str, ArgValue]:
    """The candidate's engine args: its base profile's (recipe args under them), its own on top."""
    return {**profile_args(load_recipe(recipe).recipe, candidate.base), **candidate.args}


def _kv(ab: dict[str, Any]) -> dict[str, int | None]:
    found: dict[str, int | None] = {}
    for boot in ab.get("boots", []):
        tokens = (boot.get("boot") or {}).get("kv_pool_tokens")
        if tokens:
            found[boot["name"]] = int(tokens)
    return found


def choose(request: TuneRequest, state: TuneState, found: list[Candidate],
           knee: dict[str, Any], ab: dict[str, Any]) -> dict[str, Any]:
    prefill = knee["summary"]["engine"]["prefill"]
    knobs = knobs_of(load_recipe(request.recipe).recipe.engine.kind)
    steps = {c.name: effective_step(merged_args(request.recipe, c), knobs) for c in found}
    costs = {n: (prefill_cost(prefill, s, REFERENCE_STEP) if s else None)
             for n, s in steps.items()}
    largest = {c.name: largest_n(request.agents, met_at_target(ab["samples"], c.name),
                                 state.sweep(c.name)) for c in found}
    table = rows([s for s in ab["samples"]], [c.name for c in found], costs, _kv(ab), largest)
    for row in table:
        row["step"] = steps.get(row["name"])
    ranked = rank(table)
    share = knee["summary"]["engine"]["knee"].get("share_of_peak")
    return {"table": table, "ranking": [r["name"] for r in ranked],
            "chosen": ranked[0]["name"] if ranked else None,
            "binding": binding(table, share), "reference_step": REFERENCE_STEP,
            "device": conditions.device(), "engine": conditions.engine_version(
                knee.get("server") or {}), "date": conditions.today()}


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def tuned_profile(request: TuneRequest, data: dict[str, Any], found: list[Candidate],
                  knee: dict[str, Any], report: Path) -> TunedProfile:
    result = data["result"]
    chosen = next(c for c in found if c.name == result["chosen"])
    row = next(r for r in result["table"] if r["name"] == chosen.name)
    engine = knee["summary"]["engine"]
    k, sat = engine["knee"], engine["decode_saturation"]
    recipe = load_recipe(request.recipe).recipe
    knobs = knobs_of(recipe.engine.kind)
    base = recipe.profiles[chosen.base].args
    args = {**base, **chosen.args}
    measured = (f"goodput {_pct(row['goodput'])} (min {_pct(row['goodput_min'])}, "
                f"{row['reps']} reps) at {request.agents} agents, {request.workload}, "
                f"{request.slo}; largest N meeting it {row['largest_n']}")
    step = row.get("step")
    rate = rate_at(engine["prefill"], "step", step) if step else None
    comments = {
        knobs.batched_tokens: f"prefill knee {k['knee_at']} tokens/step ({k['knee_rate'] or 0:,.0f} tok/s, "
               f"engine window; peak {k['peak'] or 0:,.0f} at {k['peak_at']}); {measured}",
        knobs.long_prefill_threshold: f"a long prefill runs {step}-token steps at {rate or 0:,.0f} tok/s: "
                   f"{_pct(row['prefill_cost'])} prefill cost against {REFERENCE_STEP}-token "
                   f"steps (the knee's curve); {measured}",
        knobs.max_num_seqs: f"decode {'saturates at batch ' if sat['saturated'] else 'not saturated up to '}"
              f"{sat['knee_at']} ({sat['peak'] or 0:,.0f} tok/s peak, engine window); "
              f"holds {request.agents} agents and the background job",
    }
    notes = {name: (comments.get(name, measured) if name in chosen.args else
                    f"from profile {chosen.base}; {comments[name]}" if name in comments else
                    f"from profile {chosen.base}, unchanged") for name in args}
    header = [f"Chosen by sm121 tune from {len(result['table'])} candidates (ranking: "
              f"{', '.join(result['ranking'])}): {chosen.name}, {chosen.why}.",
              f"Measured on {result['device']}, {result['engine']}, {result['date']}; "
              f"report {report}.",
              f"Targets: goodput >= 95% and prefill cost <= 5%: {result['binding']['text']}"]
    return TunedProfile(f"{chosen.name} chosen by sm121 tune for {request.workload} at "
                        f"{request.slo}, {request.agents} agents", args, notes, header)
