"""The memory planner: recipe + profile + overrides + node -> KV budget, pool and concurrency.

Pure: the model's files, the observed boots and the engine's flag names arrive in the
MemoryRequest (sizing/ reads them).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from sm121.engines.adapter import MemoryFlags
from sm121.memory.advice import explain, memory_findings
from sm121.memory.budget import GIB, Budget, default_reserve, explicit_kv_bytes, gmu_budget
from sm121.memory.calibration import Observation
from sm121.memory.check_plan import (
    NEED_TOLERANCE,
    calibrate_check,
    observed_boot,
    self_inconsistent,
    startup_check,
)
from sm121.memory.fit import fit
from sm121.memory.kv import KvLayout, Sharding, kv_dtype, kv_layout
from sm121.memory.model import (
    DEFAULT_GMU,
    GB10_ASSUMED,
    Comparison,
    Context,
    MemoryPlan,
    MemoryRequest,
    ModelFiles,
    NodeMemory,
)
from sm121.memory.pool import Pool, kv_pool
from sm121.plan.effective import effective_profile
from sm121.recipes.schema import ArgValue, Recipe

# Re-exported: callers plan memory with these.
__all__ = ["GB10_ASSUMED", "MemoryPlan", "MemoryRequest", "NodeMemory", "fitted", "plan_memory",
           "resolve"]


def resolve(request: MemoryRequest) -> Context:
    recipe, source = request.recipe.recipe, request.recipe.source
    effective = effective_profile(recipe, request.profile, source, request.overrides,
                                  request.env)
    profile, args, env = effective.profile, dict(effective.args), effective.env
    files = request.files
    layout = _layout(recipe, files, args, request.flags)
    weights, weights_how = _weights(recipe, files, request.weights_gib)
    return Context(recipe, profile, args, env, files, layout, default_reserve(files.config),
                   weights, weights_how, request.flags)


def fitted(request: MemoryRequest) -> tuple[Context, list[Observation]]:
    """The resolved context with its unknowns fitted to the recipe's observed boots."""
    ctx = resolve(request)
    observations = list(request.observations)
    if not request.calibrate:
        return calibrate_check(ctx, []), observations
    return calibrate_check(fit(ctx, observations), observations), observations


def _layout(recipe: Recipe, files: ModelFiles, args: Mapping[str, Any],
            flags: MemoryFlags) -> KvLayout | None:
    if not files.config:
        return None
    dtype = kv_dtype(_str(args.get(flags.kv_cache_dtype)),
                     _str(flags.value(args, flags.dtype)) or _model_dtype(files.config))
    par = recipe.parallelism
    return kv_layout(files.config, dtype, Sharding(par.tp, par.pp, par.dcp))


def plan_memory(request: MemoryRequest) -> MemoryPlan:
    ctx, observations = fitted(request)
    plan = _predict(ctx, request)
    plan.comparisons = [c for o in observations if (c := _compare(ctx, request, o))]
    plan.unreproduced = _unreproduced(plan.comparisons, observations)
    booked = plan.startup is not None and bool(plan.startup.booked_kv_gib)
    if plan.startup is not None and (seen := observed_boot(ctx, observations, booked)):
        said = " (the source's words: outcome assumed)" if "outcome" in seen.assumed else ""
        plan.startup.observed = f"{'booted' if seen.booted else 'refused'} ({seen.source}){said}"
    if plan.startup is not None and plan.startup.booking_note:
        plan.unreproduced.append(plan.startup.booking_note)
    plan.explanation = explain(plan, ctx)
    plan.findings = memory_findings(plan, ctx)
    return plan


def _predict(ctx: Context, request: MemoryRequest) -> MemoryPlan:
    budget = _budget(ctx, request)
    check = startup_check(ctx, budget.kv_gib, request.node.uma, budget.mode == "explicit")
    pool: Pool | None = None
    # A MemFree reader on unified memory sizes its pool from the KV it found, the page cache
    # of its own load booked: the observed boots' budget, not the nominal one.
    pool_bytes = int(check.budget_gib * GIB) if check.booked_kv_gib else budget.kv_bytes
    if ctx.layout is not None:
        pool = kv_pool(ctx.layout, max(0, pool_bytes), ctx.block_size, ctx.max_model_len,
                       ctx.batched_tokens)
    return MemoryPlan(
        recipe=ctx.recipe.name, profile=ctx.profile, node=request.node.name,
        node_total_gib=request.node.total_gib, node_how=request.node.how, mode=budget.mode,
        gmu=budget.gmu, gmu_ceiling=ctx.recipe.limits.gmu_ceiling,
        gmu_ceiling_how=_ceiling_how(ctx.recipe), kv_gib=budget.kv_gib,
        weights_gib=ctx.weights_gib, weights_how=ctx.weights_how,
        reserve_gib=budget.reserve_gib, reserve_how=ctx.reserve.source,
        kv_how=budget.explicit_from or (ctx.layout.describe() if ctx.layout else ""),
        block_size=ctx.block_size, batched_tokens=ctx.batched_tokens,
        max_model_len=ctx.max_model_len,
        bytes_per_token=ctx.layout.bytes_per_token if ctx.layout else None,
        kv_dtype=ctx.layout.dtype if ctx.layout and ctx.layout.attention != "calibrated" else None,
        pool_tokens=pool.tokens if pool else None, num_blocks=pool.num_blocks if pool else None,
        max_concurrency=round(pool.max_concurrency, 4) if pool else None,
        largest_context=pool.largest_context if pool else None,
        request_kv_gib=check.need_gib, startup=check,
    )


def _budget(ctx: Context, request: MemoryRequest) -> Budget:
    explicit = ((request.kv_bytes, "explicit KV size") if request.kv_bytes is not None
                else explicit_kv_bytes(ctx.args, ctx.env, ctx.flags))
    if explicit is None and ctx.flags.gmu is None and ctx.layout is not None:
        explicit = _context_sized(ctx)
    if explicit is not None:
        return Budget("explicit", explicit[0] / GIB, explicit_from=explicit[1])
    gmu = float(ctx.flags.value(ctx.args, ctx.flags.gmu) or DEFAULT_GMU)
    reserve = ctx.reserve.at(ctx.batched_tokens)
    return gmu_budget(request.node.total_gib, gmu, ctx.weights_gib or 0.0, reserve)


def _context_sized(ctx: Context) -> tuple[int, str] | None:
    """An engine with no memory share (llama.cpp) allocates exactly its context: `c` cells
    of K and V, whatever the memory; the KV is that, not a share of the node."""
    assert ctx.layout is not None
    cells = ctx.args.get(ctx.flags.max_model_len)
    if not isinstance(cells, int) or isinstance(cells, bool) or cells <= 0:
        return None
    per_token = ctx.layout.bytes_per_token
    return (int(cells * per_token), f"{ctx.flags.max_model_len} {cells:,} cells x {per_token:,.0f} B/token "
            "(the engine allocates exactly its context)")


def _compare(ctx: Context, request: MemoryRequest,
             obs: Observation) -> Comparison | None:
    if obs.pool_tokens is None and obs.kv_gib is None and obs.booted is None:
        return None
    flags = ctx.flags
    settings = {k: v for k, v in ((flags.gmu, obs.gmu),
                                  (flags.batched_tokens, obs.batched_tokens),
                                  (flags.max_model_len, obs.max_model_len),
                                  (flags.block_size, obs.block_size),
                                  (flags.kv_cache_dtype, obs.kv_cache_dtype))
                if k is not None and v is not None}
    args = ctx.args | settings
    at = replace(ctx, args=args, layout=_layout(ctx.recipe, ctx.files, args, flags) or ctx.layout,
                 weights_gib=obs.weights_gib if obs.weights_gib is not None else ctx.weights_gib)
    node = NodeMemory(request.node.name, obs.node_total_gib or request.node.total_gib, "",
                      uma=request.node.uma)
    kv_bytes = int(obs.kv_gib * GIB) if obs.kv_explicit and obs.kv_gib is not None else None
    predicted = _predict(at, replace(request, node=node, kv_bytes=kv_bytes))
    outcome = _outcome_at(predicted, obs)
    described = [f"profile {obs.profile or '-'}"] + [f"{k} {v}" for k, v in settings.items()]
    if obs.kv_explicit and obs.kv_gib is not None:
        described.append(f"KV {obs.kv_gib:g} GiB")
    where = (f"{obs.stack.name}; {obs.origin.section}" if obs.stack and obs.origin else "")
    return Comparison(
        source=obs.source, where=where, settings=", ".join(described),
        predicted_tokens=predicted.pool_tokens, observed_tokens=obs.pool_tokens,
        predicted_kv_gib=round(_kv_at(predicted, obs), 2), observed_kv_gib=obs.kv_gib,
        calibrates=obs.source in ctx.calibrated_from,
        predicted_need_gib=predicted.startup.need_gib if predicted.startup else None,
        observed_need_gib=obs.need_gib, predicted_outcome=outcome,
        observed_outcome=None if obs.booted is None else ("boots" if obs.booted else "refuses"),
    )


def _kv_at(predicted: MemoryPlan, obs: Observation) -> float:
    """The KV the engine finds there: with the page cache booked (the median observed boot)
    for a boot that had it, else the budget."""
    check = predicted.startup
    if obs.page_cache_booked and check is not None and check.booked_kv_gib:
        return check.budget_gib
    return predicted.kv_gib


def _outcome_at(predicted: MemoryPlan, obs: Observation) -> str | None:
    """The check's verdict at the observation: against the KV it reported when it did (the
    engine compared with that figure), else against the plan's budget there."""
    check = predicted.startup
    if check is not None and check.bound:
        return "boots"
    if check is None or check.need_gib is None:
        return None
    if obs.kv_gib is not None:
        return "refuses" if check.need_gib > obs.kv_gib else "boots"
    budget = (statistics.median(check.booked_kv_gib) if obs.page_cache_booked
              and check.booked_kv_gib else check.nominal_kv_gib)
    return "refuses" if check.need_gib > budget else "boots"


def _ceiling_how(recipe: Recipe) -> str:
    limits = recipe.limits
    if limits.gmu_ceiling is None:
        return ""
    if limits.gmu_ceiling_measured:
        return f"measured on {limits.gmu_ceiling_source or 'this stack'}"
    source = limits.gmu_ceiling_source.removeprefix("inherited unmeasured from ")
    return f"assumed from {source or 'another stack'}: not measured on this model"


def _unreproduced(comparisons: list[Comparison],
                  observations: list[Observation]) -> list[str]:
    """Every observation the model does not reproduce, said, never dropped."""
    lines = []
    assumed = {o.source for o in observations if "outcome" in o.assumed}
    for c in comparisons:
        if c.predicted_outcome and c.observed_outcome and c.predicted_outcome != c.observed_outcome:
            lines.append(f"{c.source}: observed {c.observed_outcome.replace('boots', 'booted')}"
                         f", the model says it {c.predicted_outcome} (need "
                         f"{c.predicted_need_gib or 0:.2f} GiB against "
                         f"{c.observed_kv_gib if c.observed_kv_gib is not None else c.predicted_kv_gib}"
                         " GiB)" + ("; that outcome is the source's words, assumed, not a boot "
                                    "it shows" if c.source in assumed else ""))
        if c.observed_need_gib and c.predicted_need_gib is not None and abs(
                c.predicted_need_gib - c.observed_need_gib) > NEED_TOLERANCE * c.observed_need_gib:
            lines.append(f"{c.source}: need {c.predicted_need_gib:.2f} GiB predicted, "
                         f"{c.observed_need_gib} GiB logged")
    return lines + [t for o in observations if (t := self_inconsistent(o))]


def _weights(recipe: Recipe, files: ModelFiles, given: float | None) -> tuple[float | None, str]:
    ranks = recipe.parallelism.tp * recipe.parallelism.pp
    if given is not None:
        return given, "given (--weights-gib)"
    if files.weights_bytes:
        total = files.weights_bytes / GIB
        return total / ranks, f"safetensors in {files.directory}: {total:.3f} GiB / {ranks} ranks"
    if recipe.model.size_gb:
        total = recipe.model.size_gb * 1e9 / GIB
        return total / ranks, (f"recipe model.size_gb {recipe.model.size_gb} GB = {total:.1f} "
                               f"GiB / {ranks} ranks (TP x PP)")
    return None, "unknown: set model.size_gb in the recipe or pass --weights-gib"


def _model_dtype(config: Mapping[str, Any]) -> str | None:
    value = config.get("dtype") or config.get("torch_dtype")
    return str(value) if value else None


def _str(value: ArgValue) -> str | None:
    return None if value is None else str(value)
