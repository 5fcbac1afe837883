"""Fit the planner's unknowns to observed boots: the reserve's level, the bytes per pool token
of a model whose config.json is not here, and how the reserve grows with the chunk.

1. Level: a boot that logged its KV memory at a known GMU gives the reserve at its
   max-num-batched-tokens (reserve = GMU x total - weights - KV).
2. Bytes per pool token (only without config.json): a boot that logged its pool at the same
   chunk, where step 1 gives its KV bytes.
3. Slope: a pool logged at another chunk size gives the reserve there; the difference over
   the chunk difference is the activation memory per batched token.
"""

from __future__ import annotations

from dataclasses import replace

from sm121.memory.budget import GIB, Reserve
from sm121.memory.calibration import Observation
from sm121.memory.kv import KvLayout
from sm121.memory.model import DEFAULT_BATCHED_TOKENS, Context


def fit(ctx: Context, observations: list[Observation]) -> Context:
    """Observations of this profile come first, so they win over the recipe's others."""
    ordered = sorted(observations, key=lambda o: o.profile != ctx.profile)
    anchor = next((o for o in ordered if o.reserve_gib() is not None), None)
    if anchor is None:
        # No reserve measured; a pool logged beside the KV it was sized from (a boot with its
        # page cache booked reports both) still gives the bytes per pool token.
        if ctx.layout is None:
            ctx = _layout_from_pool(ctx, [o for o in ordered if o.kv_gib is not None],
                                    ctx.batched_tokens)
        return ctx
    reserve_gib, batched = anchor.reserve_gib() or 0.0, _batched(anchor)
    if anchor.weights_gib is not None and ctx.weights_how.startswith("recipe"):
        # A measured per-rank figure beats the recipe's size on disk divided by the ranks.
        ctx = replace(ctx, weights_gib=anchor.weights_gib,
                      weights_how=f"measured {anchor.weights_gib} GiB per rank ({anchor.source})")
    ctx = replace(ctx, calibrated_from=(anchor.source,), reserve=ctx.reserve.shifted_to(
        reserve_gib, batched, f"calibrated: {reserve_gib:.2f} GiB at max-num-batched-tokens "
        f"{batched} from {anchor.source}"))
    if ctx.layout is None:
        ctx = _layout_from_pool(ctx, ordered, batched)
    return _slope_from_pools(ctx, ordered, reserve_gib, batched)


def _layout_from_pool(ctx: Context, observations: list[Observation], batched: int) -> Context:
    for obs in observations:
        if obs.pool_tokens and _budget_known(obs) and _batched(obs) == batched:
            kv = _kv_gib(obs, ctx.reserve)
            per_token = kv * GIB / obs.pool_tokens
            if per_token > 0:
                layout = KvLayout(full_bytes_per_token=per_token, sliding=(), dcp=1,
                                  attention="calibrated", dtype=f"from {obs.source}", layers=0)
                return replace(ctx, layout=layout,
                               calibrated_from=(*ctx.calibrated_from, obs.source))
    return ctx


def _slope_from_pools(ctx: Context, observations: list[Observation], anchor_gib: float,
                      anchor_batched: int) -> Context:
    if ctx.layout is None:
        return ctx
    for obs in observations:
        if not obs.pool_tokens or not _budget_known(obs) or _batched(obs) == anchor_batched:
            continue
        kv = obs.pool_tokens * ctx.layout.bytes_per_token / GIB
        assert obs.gmu is not None and obs.node_total_gib is not None
        reserve_there = obs.gmu * obs.node_total_gib - (obs.weights_gib or 0.0) - kv
        slope = (reserve_there - anchor_gib) / (_batched(obs) - anchor_batched) * 1024
        if slope <= 0:
            continue  # noise, or a different engine build: keep the estimate
        reserve = Reserve(anchor_gib - slope * anchor_batched / 1024, slope,
                          f"calibrated: {anchor_gib:.2f} GiB at max-num-batched-tokens "
                          f"{anchor_batched} plus {slope:.3f} MiB per batched token (from "
                          f"{obs.source})")
        return replace(ctx, reserve=reserve, calibrated_from=(*ctx.calibrated_from, obs.source))
    return ctx


def _budget_known(obs: Observation) -> bool:
    return bool(obs.gmu and obs.node_total_gib) and not obs.kv_explicit


def _kv_gib(obs: Observation, reserve: Reserve) -> float:
    if obs.kv_gib is not None:
        return obs.kv_gib
    assert obs.gmu is not None and obs.node_total_gib is not None
    return obs.gmu * obs.node_total_gib - (obs.weights_gib or 0.0) - reserve.at(_batched(obs))


def _batched(obs: Observation) -> int:
    return obs.batched_tokens or DEFAULT_BATCHED_TOKENS
