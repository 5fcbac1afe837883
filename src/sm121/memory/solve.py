"""`--solve agents=4,context=128k`: the gpu-memory-utilization and max-model-len that serve a
load, or why it cannot be done."""

from __future__ import annotations

import math
import re
from dataclasses import replace

from pydantic import BaseModel

from sm121.errors import Sm121Error
from sm121.memory.budget import GIB, gmu_for_kv
from sm121.memory.model import MemoryPlan, MemoryRequest
from sm121.memory.planner import fitted, plan_memory
from sm121.memory.pool import kv_bytes_for


class Load(BaseModel):
    agents: int
    context: int


class Solution(BaseModel):
    load: Load
    feasible: bool
    gpu_memory_utilization: float | None = None
    max_model_len: int | None = None
    kv_needed_gib: float | None = None
    explicit_kv_gib: float | None = None  # for an explicit KV size (the CPU build)
    reason: str
    plan: MemoryPlan | None = None  # the plan at the solution (or at the ceiling)


def parse_load(text: str) -> Load:
    """`agents=4,context=128k`; k and m are powers of 2 (128k = 131072), as contexts are."""
    values: dict[str, int] = {}
    for part in text.split(","):
        key, _, raw = part.partition("=")
        match = re.fullmatch(r"\s*(\d+)\s*([kKmM]?)\s*", raw)
        if key.strip() not in ("agents", "context") or not match:
            raise Sm121Error(f"--solve {text!r} is not agents=N,context=N[k|m]",
                             "example: --solve agents=4,context=128k")
        scale = {"": 1, "k": 1024, "m": 1024 * 1024}[match.group(2).lower()]
        values[key.strip()] = int(match.group(1)) * scale
    if set(values) != {"agents", "context"}:
        raise Sm121Error(f"--solve {text!r} needs both agents and context",
                         "example: --solve agents=4,context=128k")
    return Load(**values)


def solve(request: MemoryRequest, load: Load) -> Solution:
    flags = request.flags
    at_load = replace(request, overrides={**request.overrides, flags.max_model_len: load.context})
    ctx, _ = fitted(at_load)
    base = plan_memory(at_load)
    if ctx.layout is None:
        return Solution(load=load, feasible=False, plan=base,
                        reason="the KV bytes per token are unknown: no config.json here and no "
                               "observed pool to calibrate from")
    need = kv_bytes_for(ctx.layout, load.agents, load.context, ctx.block_size,
                        ctx.batched_tokens) / GIB
    if base.mode == "explicit":
        return _solve_explicit(load, need, base)
    return _solve_gmu(at_load, load, need, base)


def _solve_explicit(load: Load, need: float, base: MemoryPlan) -> Solution:
    space = math.ceil(need)  # VLLM_CPU_KVCACHE_SPACE takes whole GiB
    return Solution(load=load, feasible=True, max_model_len=load.context,
                    kv_needed_gib=round(need, 3), explicit_kv_gib=space, plan=base,
                    reason=f"{load.agents} x {load.context:,} tokens need {need:.2f} GiB of KV: "
                           f"set the KV size to {space} GiB (now {base.kv_how})")


def _solve_gmu(request: MemoryRequest, load: Load, need: float, base: MemoryPlan) -> Solution:
    assert base.reserve_gib is not None
    ceiling = base.gmu_ceiling or 0.95
    gmu = math.ceil(gmu_for_kv(need, base.node_total_gib, base.weights_gib or 0.0,
                               base.reserve_gib) * 100) / 100
    gmu_flag = request.flags.gmu
    if gmu <= ceiling:
        plan = plan_memory(replace(request, overrides={**request.overrides, gmu_flag: gmu}))
        top = plan_memory(replace(request, overrides={**request.overrides, gmu_flag: ceiling}))
        return Solution(load=load, feasible=True, gpu_memory_utilization=gmu,
                        max_model_len=load.context, kv_needed_gib=round(need, 3), plan=plan,
                        reason=f"{load.agents} x {load.context:,} tokens need {need:.2f} GiB of "
                               f"KV; GMU {gmu:.2f} is the least that serves it ({plan.kv_gib:.2f} "
                               f"GiB); the ceiling {ceiling:.2f} gives {top.kv_gib:.2f} GiB "
                               f"({top.max_concurrency or 0:.1f}x this context), room for the "
                               "prefix cache")
    top = plan_memory(replace(request, overrides={**request.overrides, gmu_flag: ceiling}))
    return Solution(load=load, feasible=False, kv_needed_gib=round(need, 3), plan=top,
                    reason=_infeasible(load, need, top, ceiling))


def _infeasible(load: Load, need: float, top: MemoryPlan, ceiling: float) -> str:
    agents = int(top.max_concurrency or 0)
    text = (f"cannot be done: {load.agents} x {load.context:,} tokens need {need:.2f} GiB of KV, "
            f"and at the ceiling GMU {ceiling:.2f} the budget is {top.kv_gib:.2f} GiB")
    if top.pool_tokens:
        text += (f" ({top.pool_tokens:,} tokens): {agents} agent(s) fit at {load.context:,}, or "
                 f"{load.agents} agents at about {top.pool_tokens // max(load.agents, 1):,} "
                 "tokens each")
    return text + "; fewer agents, a shorter context, a smaller KV dtype or more nodes help"

