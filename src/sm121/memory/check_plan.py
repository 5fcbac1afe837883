"""The second number of a memory plan: one request's need at max-model-len, as vLLM's start-up
check computes it, against the KV the engine will find, with the verdict (boots / refuses).

Each half is calibrated from the observations that measure it:
- the need, from a refusal the engine logged ("X GiB KV cache is needed" at a known
  max-model-len), when the model's config.json is not at hand; else from the layers;
- the page cache a build reading MemFree books as used on unified memory, from boots that
  reported their KV with it booked (booked = the budget without it - the KV reported).
The pool (tokens, concurrency) stays calibrated from the pools the engine logged.

What no observation measured is said as such: a need taken from the pool's bytes per token is
"assumed"; a boot of the stack that passed the check at a longer max-model-len, with the same
chunk and no more KV, bounds the need from above (the need only grows with max-model-len), and
that bound, not the assumption, gives the verdict."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import replace

from sm121.memory.budget import GIB
from sm121.memory.calibration import Observation
from sm121.memory.field import STATED_BOOKING_GB
from sm121.memory.kv import KvLayout
from sm121.memory.model import DEFAULT_BATCHED_TOKENS, DEFAULT_GMU, Context
from sm121.memory.startup_check import NeedModel, StartupCheck, rules_for, usable_for_check

NEED_TOLERANCE = 0.10  # a need within 10% of the logged one counts as reproduced
# "~20 GB" read as a figure rounded to 5 GB: 17.5-22.5 GB. An inferred booking outside that
# disagrees with the field's own statement, and the plan says so.
BOOKING_ROUNDING_GB = 2.5


def calibrate_check(ctx: Context, observations: Sequence[Observation]) -> Context:
    ordered = sorted(observations, key=lambda o: o.profile != ctx.profile)
    need = _need_model(ctx, ordered)
    booked = tuple((round(_nominal_at(ctx, o) - (o.kv_gib or 0.0), 2), o.source)
                   for o in ordered if o.page_cache_booked and o.kv_gib is not None)
    calibrated = ctx.calibrated_from + tuple(s for _, s in booked)
    ctx = replace(ctx, need=need, booked=booked, calibrated_from=calibrated,
                  passed=_passed(ctx, ordered), booking_note=_booking_note(ctx, ordered, booked))
    if ctx.layout is None and need.per_token_bytes:
        # No pool logged on this stack: the need's bytes per token stand for the pool's (one
        # uniform KV group), said as assumed.
        ctx = replace(ctx, layout=KvLayout(
            full_bytes_per_token=need.per_token_bytes, sliding=(), dcp=1, attention="calibrated",
            dtype="assumed from the start-up need per token (one uniform KV group)", layers=0))
    return ctx


def _passed(ctx: Context, observations: Sequence[Observation]) -> tuple[
        tuple[int, int, float, str], ...]:
    """Boots that passed the check, with the KV they found: reported, or their pool's bytes."""
    passed = []
    for obs in observations:
        if not obs.booted or not obs.max_model_len or "outcome" in obs.assumed:
            continue
        kv = obs.kv_gib
        if kv is None and obs.pool_tokens and ctx.layout is not None:
            kv = obs.pool_tokens * ctx.layout.bytes_per_token / GIB
        if kv is not None:
            passed.append((obs.max_model_len, obs.batched_tokens or DEFAULT_BATCHED_TOKENS,
                           round(kv, 2), obs.source))
    return tuple(passed)


def _booking_note(ctx: Context, observations: Sequence[Observation],
                  booked: tuple[tuple[float, str], ...]) -> str:
    """The booking inferred from a stack's boots against what the source says of that stack
    (Laguna: ~20 GB): they differ when the assumed reserve or weights are off."""
    stated = next((STATED_BOOKING_GB[o.stack] for o in observations
                   if o.page_cache_booked and o.stack in STATED_BOOKING_GB), None)
    if not booked or stated is None:
        return ""
    inferred = statistics.median(b for b, _ in booked)
    field = stated * 1e9 / GIB
    margin = BOOKING_ROUNDING_GB * 1e9 / GIB
    if abs(inferred - field) <= margin:
        return ""
    return (f"the page cache booked, inferred as the budget less the KV the boots reported, is "
            f"{inferred:.1f} GiB; the field says ~{stated:g} GB ({field:.1f} GiB). The "
            f"budget rests on an assumed reserve ({ctx.reserve.source}) and weights "
            f"({ctx.weights_how}): at ~{stated:g} GB the reserve would be about "
            f"{ctx.reserve.at(ctx.batched_tokens) + inferred - field:.1f} GiB")


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
            f"not measured on this stack (no refusal logged, no config.json here); assumed: the "
            f"pool's {ctx.layout.bytes_per_token:,.0f} B per token (one KV group of "
            "full-attention layers); a model with several groups or compressed layers needs "
            "more: calibrate from a refusal the engine logged"), assumed=True)
    return NeedModel(None, "unknown: no config.json here and no observed pool or refusal")


def _nominal_at(ctx: Context, obs: Observation) -> float:
    total = obs.node_total_gib or 0.0
    weights = obs.weights_gib if obs.weights_gib is not None else (ctx.weights_gib or 0.0)
    return ((obs.gmu or DEFAULT_GMU) * total - weights
            - ctx.reserve.at(obs.batched_tokens or DEFAULT_BATCHED_TOKENS))


def startup_check(ctx: Context, kv_gib: float, uma: bool, explicit: bool) -> StartupCheck:
    rules = rules_for(ctx.recipe.engine.version)
    booked = ([max(0.0, round(kv_gib - b, 2)) for b, _ in ctx.booked]
              if uma and rules.reads_memfree_on_uma and not explicit else [])
    if booked:
        budget = max(0.0, statistics.median(booked))  # nothing found is 0, never negative
        budget_how = (f"the median of the {len(booked)} observed boots with the load's page cache "
                      f"booked as used (vLLM {rules.version} reads MemFree on unified memory)")
        booked_how = ", ".join(f"{kv_gib:.2f} - {b:.2f} ({s})" for b, s in ctx.booked)
    else:
        budget, booked_how = kv_gib, ""
        budget_how = ("the KV budget" if not uma or not rules.reads_memfree_on_uma or explicit
                      else "the KV budget, calibrated from this stack's boots, which found it "
                      "with no booking measured" if ctx.reserve.source.startswith("calibrated")
                      else "the KV budget; no boot of this stack measured the page cache a "
                      "MemFree reading books (the doctor reads it from the node)")
    usable = usable_for_check(int(budget * GIB), ctx.layout, ctx.block_size, rules)
    need = ctx.need.need(ctx.layout, ctx.max_model_len, ctx.block_size, ctx.batched_tokens,
                         rules)
    largest = ctx.need.largest(ctx.layout, usable, ctx.block_size, ctx.batched_tokens, rules)
    nominal_largest = ctx.need.largest(
        ctx.layout, usable_for_check(int(kv_gib * GIB), ctx.layout, ctx.block_size, rules),
        ctx.block_size, ctx.batched_tokens, rules)
    bound = _bound(ctx, budget)
    refuses = None if need is None else need > usable
    if bound and refuses is not False:
        refuses = False  # what a boot of this stack showed wins over an assumed need
    return StartupCheck(
        rules=rules.how, need_gib=None if need is None else round(need / GIB, 3),
        need_how=ctx.need.how, nominal_kv_gib=round(kv_gib, 3), booked_kv_gib=booked,
        booked_how=booked_how, budget_gib=round(budget, 3), budget_how=budget_how,
        refuses=refuses, largest_context=largest, nominal_largest_context=nominal_largest,
        refuses_on=sum(1 for b in booked if need is not None and need > b * GIB),
        need_assumed=ctx.need.assumed, bound=bound, booking_note=ctx.booking_note,
        calibrated_from_boots=(ctx.reserve.source if not booked and ctx.reserve.source
                               .startswith("calibrated") else ""),
    )


def _bound(ctx: Context, budget: float) -> str:
    """A boot that passed at max-model-len >= this one, same chunk, with no more KV than this
    budget: the check passes here too."""
    for length, chunk, kv, source in ctx.passed:
        if length >= ctx.max_model_len and chunk == ctx.batched_tokens and budget >= kv - 0.005:
            return (f"{source} booted at max-model-len {length:,} (chunk {chunk}) with "
                    f"{kv:.2f} GiB of KV; the need only grows with max-model-len, and "
                    f"{budget:.2f} GiB is at least that")
    return ""


def observed_boot(ctx: Context, observations: Sequence[Observation],
                  booked: bool = False) -> Observation | None:
    """A boot observed at the plan's own settings (GMU, chunk, max-model-len), with the page
    cache booked as the plan's budget is: what happened there beats what the model says."""
    flags = ctx.flags
    gmu = float(flags.value(ctx.args, flags.gmu) or DEFAULT_GMU)
    for obs in observations:
        if (obs.booted is not None and obs.page_cache_booked == booked
                and obs.max_model_len == ctx.max_model_len
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
