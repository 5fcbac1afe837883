"""The second number of a memory plan: one request's need at max-model-len, as vLLM's start-up
check computes it, against the KV the engine will find, with the verdict (boots / refuses).

Each half is calibrated from the observations that measure it:
- the need, from a refusal the engine logged ("X GiB KV cache is needed" at a known
  max-model-len), when the model's config.json is not at hand; else from the layers;
- the page cache a build reading MemFree books as used on unified memory, from boots that
  reported their KV with it booked (booked = the budget without it - the KV reported).
The pool (tokens, concurrency) stays calibrated from the pools the engine logged."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import replace

from sm121.memory.budget import GIB
from sm121.memory.calibration import Observation
from sm121.memory.model import DEFAULT_BATCHED_TOKENS, DEFAULT_GMU, Context
from sm121.memory.startup_check import NeedModel, StartupCheck, rules_for, usable_for_check

NEED_TOLERANCE = 0.10  # a need within 10% of the logged one counts as reproduced


def calibrate_check(ctx: Context, observations: Sequence[Observation]) -> Context:
    ordered = sorted(observations, key=lambda o: o.profile != ctx.profile)
    need = _need_model(ctx, ordered)
    booked = tuple((round(_nominal_at(ctx, o) - (o.kv_gib or 0.0), 2), o.source)
                   for o in ordered if o.page_cache_booked and o.kv_gib is not None)
    calibrated = ctx.calibrated_from + tuple(s for _, s in booked)
    return replace(ctx, need=need, booked=booked, calibrated_from=calibrated)


def _need_model(ctx: Context, observations: Sequence[Observation]) -> NeedModel:
    if ctx.layout is not None and ctx.layout.attention != "calibrated":
        return NeedModel(None, f"from config.json's layers ({ctx.layout.describe()})")
    for obs in observations:
        if obs.need_gib and obs.max_model_len:
            per_token = obs.need_gib * GIB / obs.max_model_len
            return NeedModel(per_token, (
                f"calibrated: {obs.need_gib} GiB at max-model-len {obs.max_model_len:,} = "
                f"{per_token:,.0f} B per token of max-model-len, from {obs.source}; assumed "
                "linear (the layers are not known here: config.json is not on this machine)"))
    if ctx.layout is not None:
        return NeedModel(ctx.layout.bytes_per_token, (
            f"assumed: the pool's {ctx.layout.bytes_per_token:,.0f} B per token (one KV group "
            "of full-attention layers); a model with several groups or compressed layers needs "
            "more: calibrate from a refusal the engine logged"))
    return NeedModel(None, "unknown: no config.json here and no observed pool or refusal")


def _nominal_at(ctx: Context, obs: Observation) -> float:
    total = obs.node_total_gib or 0.0
    weights = obs.weights_gib if obs.weights_gib is not None else (ctx.weights_gib or 0.0)
    return ((obs.gmu or DEFAULT_GMU) * total - weights
            - ctx.reserve.at(obs.batched_tokens or DEFAULT_BATCHED_TOKENS))


def startup_check(ctx: Context, kv_gib: float, uma: bool, explicit: bool) -> StartupCheck:
    rules = rules_for(ctx.recipe.engine.version)
    booked = ([round(kv_gib - b, 2) for b, _ in ctx.booked]
              if uma and rules.reads_memfree_on_uma and not explicit else [])
    if booked:
        budget = statistics.median(booked)
        budget_how = (f"the median of the {len(booked)} observed boots with the load's page cache "
                      f"booked as used (vLLM {rules.version} reads MemFree on unified memory)")
        booked_how = ", ".join(f"{kv_gib:.2f} - {b:.2f} ({s})" for b, s in ctx.booked)
    else:
        budget, booked_how = kv_gib, ""
        budget_how = ("the KV budget" if not uma or not rules.reads_memfree_on_uma or explicit
                      else "the KV budget; no boot of this recipe measured the page cache a "
                      "MemFree reading books (the doctor reads it from the node)")
    usable = usable_for_check(int(budget * GIB), ctx.layout, ctx.block_size, rules)
    need = ctx.need.need(ctx.layout, ctx.max_model_len, ctx.block_size, ctx.batched_tokens,
                         rules)
    largest = ctx.need.largest(ctx.layout, usable, ctx.block_size, ctx.batched_tokens, rules)
    nominal_largest = ctx.need.largest(
        ctx.layout, usable_for_check(int(kv_gib * GIB), ctx.layout, ctx.block_size, rules),
        ctx.block_size, ctx.batched_tokens, rules)
    return StartupCheck(
        rules=rules.how, need_gib=None if need is None else round(need / GIB, 3),
        need_how=ctx.need.how, nominal_kv_gib=round(kv_gib, 3), booked_kv_gib=booked,
        booked_how=booked_how, budget_gib=round(budget, 3), budget_how=budget_how,
        refuses=None if need is None else need > usable, largest_context=largest,
        nominal_largest_context=nominal_largest,
        refuses_on=sum(1 for b in booked if need is not None and need > b * GIB),
    )


def observed_boot(ctx: Context, observations: Sequence[Observation]) -> Observation | None:
    """A boot observed at the plan's own settings (profile, GMU, chunk, max-model-len) on a
    budget without the page cache booked: what happened there beats what the model says."""
    flags = ctx.flags
    gmu = float(ctx.args.get(flags.gmu) or DEFAULT_GMU)
    for obs in observations:
        if (obs.booted is not None and not obs.page_cache_booked
                and obs.profile == ctx.profile and obs.max_model_len == ctx.max_model_len
                and obs.gmu is not None and abs(obs.gmu - gmu) < 1e-6
                and (obs.batched_tokens or DEFAULT_BATCHED_TOKENS) == ctx.batched_tokens):
            return obs
    return None


def self_inconsistent(obs: Observation) -> str | None:
    """An observation whose concurrency does not follow from its own pool is said so."""
    if not (obs.pool_tokens and obs.max_concurrency and obs.max_model_len):
        return None
    implied = obs.pool_tokens / obs.max_model_len
    if abs(implied - obs.max_concurrency) <= 0.02 * obs.max_concurrency:
        return None
    return (f"{obs.source}: the reported {obs.max_concurrency}x concurrency does not follow "
            f"from its own pool ({obs.pool_tokens:,} / {obs.max_model_len:,} = {implied:.2f}x); "
            "kept as reported, not fitted")
