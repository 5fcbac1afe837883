"""The memory planner: recipe + profile + overrides + node -> KV budget, pool and concurrency.

Pure apart from reading the model's config.json and weight sizes, and the calibration store.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from pydantic import BaseModel

from sm121.findings import Finding
from sm121.memory import calibration
from sm121.memory.budget import (
    GB10_TOTAL_GIB,
    GIB,
    Budget,
    Reserve,
    default_reserve,
    explicit_kv_bytes,
    gmu_budget,
)
from sm121.memory.fit import fit
from sm121.memory.kv import KvLayout, Sharding, kv_dtype, kv_layout
from sm121.memory.model_files import ModelFiles, find_model_files
from sm121.memory.pool import Pool, kv_pool, request_bytes
from sm121.plan.render import resolve_profile
from sm121.recipes.loader import LoadedRecipe
from sm121.recipes.schema import ArgValue, Recipe
from sm121.recipes.validate import merged_args

DEFAULT_GMU = 0.9  # vLLM's own default
DEFAULT_BATCHED_TOKENS = 2048


@dataclass(frozen=True)
class NodeMemory:
    name: str
    total_gib: float
    how: str  # where the figure comes from, said in the report


GB10_ASSUMED = NodeMemory("gb10", GB10_TOTAL_GIB,
                          "assumed GB10 node (119.6 GiB visible); pass --cluster or --node-gib")


@dataclass(frozen=True)
class MemoryRequest:
    recipe: LoadedRecipe
    profile: str | None = None
    overrides: Mapping[str, ArgValue] = field(default_factory=dict)
    node: NodeMemory = GB10_ASSUMED
    weights_gib: float | None = None  # overrides what the files or the recipe say
    kv_bytes: int | None = None  # an explicit KV size, overriding the plan's
    env: Mapping[str, str] = field(default_factory=dict)  # engine env on top of the recipe's
    calibrate: bool = True


class Comparison(BaseModel):
    source: str
    settings: str
    predicted_tokens: int | None
    observed_tokens: int | None
    predicted_kv_gib: float | None
    observed_kv_gib: float | None
    calibrates: bool = False  # this observation set the reserve or the bytes per token

    @property
    def error_pct(self) -> float | None:
        if not self.predicted_tokens or not self.observed_tokens:
            return None
        return 100.0 * (self.predicted_tokens - self.observed_tokens) / self.observed_tokens


class MemoryPlan(BaseModel):
    recipe: str
    profile: str | None
    node: str
    node_total_gib: float
    node_how: str
    mode: str  # "gmu" (KV = GMU x total - weights - reserve) or "explicit"
    gmu: float | None
    gmu_ceiling: float | None
    kv_gib: float
    weights_gib: float | None
    weights_how: str
    reserve_gib: float | None
    reserve_how: str
    kv_how: str  # the explicit setting, or the layout
    block_size: int
    batched_tokens: int
    max_model_len: int
    bytes_per_token: float | None
    kv_dtype: str | None = None
    pool_tokens: int | None
    num_blocks: int | None
    max_concurrency: float | None
    largest_context: int | None
    request_kv_gib: float | None = None  # one request at max-model-len
    comparisons: list[Comparison] = []
    explanation: list[str] = []
    findings: list[Finding] = []


@dataclass(frozen=True)
class Context:
    """Everything resolved once: args, env, model files, layout, reserve."""

    recipe: Recipe
    profile: str | None
    args: dict[str, Any]
    env: dict[str, str]
    files: ModelFiles
    layout: KvLayout | None
    reserve: Reserve
    weights_gib: float | None
    weights_how: str
    calibrated_from: tuple[str, ...] = ()

    @property
    def block_size(self) -> int:
        default = 128 if "VLLM_CPU_KVCACHE_SPACE" in self.env else 16  # CPU build vs CUDA
        return int(self.args.get("block-size") or default)

    @property
    def batched_tokens(self) -> int:
        return int(self.args.get("max-num-batched-tokens") or DEFAULT_BATCHED_TOKENS)

    @property
    def max_model_len(self) -> int:
        value = self.args.get("max-model-len")
        config = self.files.config or {}
        return int(value or config.get("max_position_embeddings") or 131072)


def resolve(request: MemoryRequest) -> Context:
    recipe, source = request.recipe.recipe, request.recipe.source
    profile = resolve_profile(recipe, request.profile, source)
    args = merged_args(recipe, profile) | dict(request.overrides)
    env = (dict(recipe.env) | (dict(recipe.profiles[profile].env) if profile else {})
           | dict(request.env))
    files = find_model_files(recipe)
    layout = _layout(recipe, files, args)
    weights, weights_how = _weights(recipe, files, request.weights_gib)
    return Context(recipe, profile, args, env, files, layout, default_reserve(files.config),
                   weights, weights_how)


def fitted(request: MemoryRequest) -> tuple[Context, list[calibration.Observation]]:
    """The resolved context with its unknowns fitted to the recipe's observed boots."""
    ctx = resolve(request)
    observations = calibration.load_observations(ctx.recipe.name)
    return (fit(ctx, observations) if request.calibrate else ctx), observations


def _layout(recipe: Recipe, files: ModelFiles, args: Mapping[str, Any]) -> KvLayout | None:
    if not files.config:
        return None
    dtype = kv_dtype(_str(args.get("kv-cache-dtype")),
                     _str(args.get("dtype")) or _model_dtype(files.config))
    par = recipe.parallelism
    return kv_layout(files.config, dtype, Sharding(par.tp, par.pp, par.dcp))


def plan_memory(request: MemoryRequest) -> MemoryPlan:
    from sm121.memory.advice import explain, memory_findings

    ctx, observations = fitted(request)
    plan = _predict(ctx, request)
    plan.comparisons = [c for o in observations if (c := _compare(ctx, request, o))]
    plan.explanation = explain(plan, ctx)
    plan.findings = memory_findings(plan, ctx)
    return plan


def _predict(ctx: Context, request: MemoryRequest) -> MemoryPlan:
    budget = _budget(ctx, request)
    pool: Pool | None = None
    if ctx.layout is not None:
        pool = kv_pool(ctx.layout, budget.kv_bytes, ctx.block_size, ctx.max_model_len,
                       ctx.batched_tokens)
    return MemoryPlan(
        recipe=ctx.recipe.name, profile=ctx.profile, node=request.node.name,
        node_total_gib=request.node.total_gib, node_how=request.node.how, mode=budget.mode,
        gmu=budget.gmu, gmu_ceiling=ctx.recipe.limits.gmu_ceiling, kv_gib=budget.kv_gib,
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
        request_kv_gib=(request_bytes(ctx.layout, ctx.max_model_len, ctx.block_size,
                                      ctx.batched_tokens) / GIB if ctx.layout else None),
    )


def _budget(ctx: Context, request: MemoryRequest) -> Budget:
    explicit = ((request.kv_bytes, "explicit KV size") if request.kv_bytes is not None
                else explicit_kv_bytes(ctx.args, ctx.env))
    if explicit is not None:
        return Budget("explicit", explicit[0] / GIB, explicit_from=explicit[1])
    gmu = float(ctx.args.get("gpu-memory-utilization") or DEFAULT_GMU)
    reserve = ctx.reserve.at(ctx.batched_tokens)
    return gmu_budget(request.node.total_gib, gmu, ctx.weights_gib or 0.0, reserve)


def _compare(ctx: Context, request: MemoryRequest,
             obs: calibration.Observation) -> Comparison | None:
    if obs.pool_tokens is None and obs.kv_gib is None:
        return None
    settings = {k: v for k, v in (("gpu-memory-utilization", obs.gmu),
                                  ("max-num-batched-tokens", obs.batched_tokens),
                                  ("max-model-len", obs.max_model_len),
                                  ("block-size", obs.block_size),
                                  ("kv-cache-dtype", obs.kv_cache_dtype)) if v is not None}
    args = ctx.args | settings
    at = replace(ctx, args=args, layout=_layout(ctx.recipe, ctx.files, args) or ctx.layout,
                 weights_gib=obs.weights_gib if obs.weights_gib is not None else ctx.weights_gib)
    node = NodeMemory(request.node.name, obs.node_total_gib or request.node.total_gib, "")
    kv_bytes = int(obs.kv_gib * GIB) if obs.kv_explicit and obs.kv_gib is not None else None
    predicted = _predict(at, replace(request, node=node, kv_bytes=kv_bytes))
    described = [f"profile {obs.profile}"] + [f"{k} {v}" for k, v in settings.items()]
    if obs.kv_explicit and obs.kv_gib is not None:
        described.append(f"KV {obs.kv_gib:g} GiB")
    return Comparison(
        source=obs.source, settings=", ".join(described),
        predicted_tokens=predicted.pool_tokens, observed_tokens=obs.pool_tokens,
        predicted_kv_gib=round(predicted.kv_gib, 2), observed_kv_gib=obs.kv_gib,
        calibrates=obs.source in ctx.calibrated_from,
    )


def _weights(recipe: Recipe, files: ModelFiles, given: float | None) -> tuple[float | None, str]:
    ranks = recipe.parallelism.tp * recipe.parallelism.pp
    if given is not None:
        return given, "given (--weights-gib)"
    if files.weight_files:
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
