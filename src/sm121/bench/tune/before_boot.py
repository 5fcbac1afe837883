"""The arms before any of them boots (issue 44, "tune confirms a prediction"): each arm's
capacity predicted from the knee's boot (the pool of the same memory settings), the fp8 KV
arm added where KV binds for the baseline (tune/kv_arm.py), and the arms ordered against the
target: an arm predicted to hold fewer agents than the target is measured after the arms
predicted to hold it (or not known), in its priority order, so when the budget runs short it
is the one left out ("dropped"), and tune says which and why. The working set is the expected
session where the knee's engine counted the workload's first prompt, else the longest one
(tune/first_prompt.py), and the cold start takes the knee's rate for a fresh prompt of that
length (tune/cold_rate.py); tune says which, and why not. Made once, with the arms, and kept
in tune.json: a resume keeps the order."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sm121.bench.tune.candidates import Candidate, merged_args
from sm121.bench.tune.cold_rate import cold_rate
from sm121.bench.tune.cold_rate import said as said_rate
from sm121.bench.tune.files import KneeFile
from sm121.bench.tune.first_prompt import said
from sm121.bench.tune.kv_arm import fp8_arm
from sm121.bench.tune.predict import MeasuredPool, predict_before_boot
from sm121.bench.tune.request import TuneRequest
from sm121.bench.tune.result import PredictionRecord
from sm121.engines.adapter import EngineAdapter
from sm121.engines.client import block_size_of
from sm121.memory.capacity import Capacity
from sm121.memory.capacity_types import Resource
from sm121.memory.cold_start import FreshRate
from sm121.plan.effective import profile_args, profile_env
from sm121.recipes.schema import Recipe


@dataclass(frozen=True)
class ArmsBeforeBoot:
    arms: list[Candidate]  # in the order tune measures them
    predictions: dict[str, PredictionRecord]
    kv_arm: str  # the fp8 KV arm: added, or why not
    lines: list[str]  # what tune prints


def knee_pool(knee: KneeFile, recipe: Recipe) -> MeasuredPool | None:
    """The knee's boot as a measured pool (its profile's args with its overrides on top, its
    profile's env); None when its boot logged no pool."""
    boot = knee.boot
    tokens = boot.boot.kv_pool_tokens if boot else None
    if boot is None or not tokens or (boot.profile and boot.profile not in recipe.profiles):
        return None
    return MeasuredPool(
        tokens=int(tokens), block_size=block_size_of(knee.server.cache_config or {}) or 16,
        where="the knee's boot",
        args={**profile_args(recipe, boot.profile), **boot.overrides},
        env=profile_env(recipe, boot.profile), max_model_len=knee.server.max_model_len)


def _cold_start(capacity: Capacity) -> str | None:
    """What the cold start allows, in a few words (None: the model had no such resource)."""
    found = next((a for a in capacity.allowances if a.resource is Resource.COLD_START), None)
    if found is None:
        return None
    return ("no limit of its own" if not found.limits else "not known" if found.agents is None
            else f"allows {found.agents}")


def record(capacity: Capacity | None, target: int,
           fresh: FreshRate | None = None) -> PredictionRecord:
    """`fresh`: the rate the prediction was given for the cold start (kept where the cold start
    took it: a first prompt counted for the arm, a step budget, a judged second turn)."""
    if capacity is None or capacity.predicted is None:
        return PredictionRecord(line="not known before its boot: no boot measured its "
                                "memory settings")
    found = PredictionRecord(
        predicted=capacity.predicted,
        binding=capacity.binding.value if capacity.binding else None,
        at_most=bool(capacity.unknown),
        pool_tokens=capacity.pool.tokens if capacity.pool else None,
        pool_source=capacity.pool.source if capacity.pool else None,
        working_set_tokens=capacity.working_set_tokens,
        first_prompt_tokens=capacity.first_prompt_tokens, prefix_source=capacity.prefix_source,
        cold_start=_cold_start(capacity),
        cold_prefill_tok_s=fresh.tok_s if fresh is not None and capacity.cold_start_arithmetic
        else None,
        line=capacity.headline())
    if capacity.predicted < target:
        found.below = f"predicted {found.text()}, below the target {target}"
    return found


def _short(found: PredictionRecord) -> str:
    if found.predicted is None:
        return found.line
    return (f"{found.text()}; pool {found.pool_tokens or 0:,} tokens from {found.pool_source}; "
            f"{found.working_set()}")


def ordered(arms: Sequence[Candidate], predictions: Mapping[str, PredictionRecord]
            ) -> list[Candidate]:
    """The arms predicted to hold the target (or not known) first, then those below it, each
    group in its priority order."""
    def below(arm: Candidate) -> bool:
        found = predictions.get(arm.name)
        return found is not None and found.below is not None

    return [a for a in arms if not below(a)] + [a for a in arms if below(a)]


def before_boot(request: TuneRequest, recipe: Recipe, engine: EngineAdapter,
                knee: KneeFile | None, arms: list[Candidate],
                flags: frozenset[str]) -> ArmsBeforeBoot:
    """The arms predicted, the fp8 KV arm added where it applies, and ordered."""
    pools = [p for p in [knee_pool(knee, recipe) if knee else None] if p is not None]
    counted = knee.first_prompt if knee else None
    rate = cold_rate(knee)
    fresh = rate.rate()

    def predicted(arm: Candidate) -> Capacity | None:
        return predict_before_boot(request, merged_args(recipe, arm),
                                   profile_env(recipe, arm.base), pools, engine, counted, fresh)

    capacities = {a.name: predicted(a) for a in arms}
    baseline = next((a for a in arms if "baseline" in a.role), arms[0] if arms else None)
    note = "no fp8 KV arm: no baseline arm"
    if baseline is not None:
        kv, note = fp8_arm(baseline, merged_args(recipe, baseline), capacities[baseline.name],
                           engine, flags)
        if kv is not None and kv.name not in capacities:
            # after the one-knob arms, before the recipe's other profiles and the defaults
            at = max((i + 1 for i, a in enumerate(arms) if a.source in ("baseline", "step 1",
                                                                         "reference")),
                     default=len(arms))
            arms = [*arms[:at], kv, *arms[at:]]
            capacities[kv.name] = predicted(kv)
    predictions = {a.name: record(capacities[a.name], request.agents, fresh) for a in arms}
    found = ordered(arms, predictions)
    lines = [said(counted), said_rate(rate)] if pools else []
    lines += [f"predicted before its boot: {a.name}: {_short(predictions[a.name])}"
              for a in found]
    lines.append(note)
    below = [a.name for a in found if predictions[a.name].below]
    if below and len(below) < len(found):
        reasons: dict[str, list[str]] = {}
        for name in below:  # most share one reason (one pool): said once
            reasons.setdefault(predictions[name].below or "", []).append(name)
        lines.append("measured last, after the arms predicted to hold the target "
                     f"{request.agents} (left out first when the budget runs short): "
                     + "; ".join(f"{', '.join(names)} ({why})"
                                 for why, names in reasons.items()))
    elif below:
        lines.append(f"every arm is predicted below the target {request.agents}: the order "
                     "stays the priority order")
    return ArmsBeforeBoot(found, predictions, note, lines)
