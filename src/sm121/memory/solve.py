"""`--solve agents=4,context=128k`: the gpu-memory-utilization and max-model-len that serve a
load, or why it cannot be done.

Where the weights dominate the memory GMU requests (the field: 77.7 of 93.3 GiB on DS4), GMU is
a KV lever, not a safety lever: a GMU below the recipe's ceiling only costs KV (the field's
0.70 left 2.39 GiB, "destructive"). There the solution stays at the ceiling and solves for what
is left: max-model-len, the agents that fit, or more nodes. The start-up check's verdict at the
solution is part of it: a load the engine refuses to boot is not a solution."""

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
    startup: str = ""  # the start-up check's verdict at the solution, in words
    refused: bool = False  # the start-up check refuses the solution's settings

WEIGHTS_DOMINATE = 0.5  # weights over half of what GMU requests at the ceiling


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
        return _checked(_solve_explicit(load, need, base))
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
    gmu_flag = request.flags.gmu
    if gmu_flag is None:
        raise Sm121Error("the memory solver sizes a share of device memory, which this "
                         "engine has no flag for", "size llama.cpp by its context: c and np")
    top = plan_memory(replace(request, overrides={**request.overrides, gmu_flag: ceiling}))
    weights = base.weights_gib or 0.0
    dominate = weights >= WEIGHTS_DOMINATE * ceiling * base.node_total_gib
    least = math.ceil(gmu_for_kv(need, base.node_total_gib, weights, base.reserve_gib) * 100) / 100
    # A MemFree reader on unified memory finds the budget less the booked page cache.
    found = top.startup.budget_gib if top.startup and top.startup.booked_kv_gib else top.kv_gib
    if least > ceiling or need > found:
        return _checked(Solution(load=load, feasible=False, kv_needed_gib=round(need, 3),
                                 plan=top, reason=_infeasible(load, need, top, ceiling, found)))
    if dominate:
        return _checked(Solution(
            load=load, feasible=True, gpu_memory_utilization=ceiling, max_model_len=load.context,
            kv_needed_gib=round(need, 3), plan=top,
            reason=f"{load.agents} x {load.context:,} tokens need {need:.2f} GiB of KV; GMU stays "
                   f"at the ceiling {ceiling:.2f} ({top.gmu_ceiling_how or 'the recipe'}): the "
                   f"weights take {weights:.1f} of the {ceiling * base.node_total_gib:.1f} GiB it "
                   f"requests, so a lower GMU (the arithmetic's least is {least:.2f}) only costs "
                   f"KV. At {ceiling:.2f}: {found:.2f} GiB, "
                   f"{top.max_concurrency or 0:.1f}x this context, room for the prefix cache"))
    plan = plan_memory(replace(request, overrides={**request.overrides, gmu_flag: least}))
    return _checked(Solution(
        load=load, feasible=True, gpu_memory_utilization=least, max_model_len=load.context,
        kv_needed_gib=round(need, 3), plan=plan,
        reason=f"{load.agents} x {load.context:,} tokens need {need:.2f} GiB of KV; GMU "
               f"{least:.2f} is the least that serves it ({plan.kv_gib:.2f} GiB); the ceiling "
               f"{ceiling:.2f} gives {top.kv_gib:.2f} GiB ({top.max_concurrency or 0:.1f}x this "
               "context), room for the prefix cache"))


def _checked(solution: Solution) -> Solution:
    """The start-up check's verdict at the solution's settings, in its words."""
    check = solution.plan.startup if solution.plan else None
    if check is None or check.refuses is None:
        return solution.model_copy(update={"startup": "vLLM's start-up check: unknown (the "
                                           "need of one request is not known here)"})
    need = "would need (assumed)" if check.need_assumed else "needs"
    words = (f"vLLM's start-up check: {check.verdict}; one request at max-model-len "
             f"{solution.plan.max_model_len if solution.plan else 0:,} {need} "
             f"{check.need_gib or 0:.2f} GiB against {check.budget_gib:.2f} GiB")
    if check.bound:
        words += f" ({check.bound})"
    return solution.model_copy(update={"startup": words, "refused": bool(check.refuses)})


def _infeasible(load: Load, need: float, top: MemoryPlan, ceiling: float, found: float) -> str:
    agents = int(top.max_concurrency or 0)
    booked = " (the KV found with the page cache booked)" if found != top.kv_gib else ""
    text = (f"cannot be done: {load.agents} x {load.context:,} tokens need {need:.2f} GiB of KV, "
            f"and at the ceiling GMU {ceiling:.2f} the budget is {found:.2f} GiB{booked}")
    if top.pool_tokens:
        text += (f" ({top.pool_tokens:,} tokens): {agents} agent(s) fit at {load.context:,}, or "
                 f"{load.agents} agents at about {top.pool_tokens // max(load.agents, 1):,} "
                 "tokens each")
    return text + "; fewer agents, a shorter context, a smaller KV dtype or more nodes help"

