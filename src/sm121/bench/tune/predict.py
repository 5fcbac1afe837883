"""An arm's capacity predicted (issue 44), twice: before its boot, from a pool already
measured in this tune (the knee's boot, or an earlier arm's) whose memory settings are the
arm's, so tune can order its arms and add the fp8 KV arm; and after its boot, from its own
pool, so its search tests about 0.9x and 1.1x of that first and bisects only where the
measurement disagrees (memory/capacity.py is the model). Both take the expected session where
the knee's engine counted the workload's first prompt, else the longest one
(tune/first_prompt.py), and the cold start at the knee's rate for a fresh prompt of that length
where it measured one (tune/cold_rate.py; else the cold start is not known)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sm121.bench.result_models import AbEntry
from sm121.bench.scenarios.agents.capacity import knobs_from_args, slo_ttft
from sm121.bench.tune.first_prompt import CountedPrompt, working_session
from sm121.bench.tune.request import TuneRequest
from sm121.engines.adapter import EngineAdapter
from sm121.engines.client import block_size_of, kv_pool_of
from sm121.errors import Sm121Error
from sm121.memory.capacity import Capacity, predict
from sm121.memory.capacity_types import Pool
from sm121.memory.cold_start import FreshRate
from sm121.memory.kv import kv_dtype
from sm121.recipes.schema import ArgValue


def arm_prediction(request: TuneRequest, entry: AbEntry, engine: EngineAdapter,
                   counted: CountedPrompt | None = None, fresh: FreshRate | None = None
                   ) -> Capacity | None:
    """The prediction for the arm `entry` measured (its boot's pool, its engine args, read by
    `engine`, the recipe's; `counted`: the knee engine's count of the first prompt; `fresh`:
    the knee's rate for a fresh prompt of that length); None when its boot logged no pool or
    the server no context length."""
    labels = entry.server.cache_config or {}
    block = block_size_of(labels) or 16
    logged = getattr(entry.boot, "kv_pool_tokens", None)
    found = kv_pool_of(labels)
    tokens = int(logged) if isinstance(logged, int) else found[0] * found[1] if found else None
    max_len = entry.server.max_model_len
    if not tokens or not max_len:
        return None
    knobs = knobs_from_args(entry.engine_args, engine.scheduler, engine.memory.kv_cache_dtype)
    shape = working_session(request.workload, request.turns or 6, int(max_len), counted)
    return predict(Pool(tokens, block, "the arm's boot"), shape, knobs,
                   slo_ttft_s=slo_ttft(request.slo), agents=request.agents, fresh_rate=fresh)


def predicted_for(request: TuneRequest, entries: Sequence[AbEntry], arm: str,
                  engine: EngineAdapter, counted: CountedPrompt | None = None,
                  fresh: FreshRate | None = None) -> Capacity | None:
    """The prediction for arm `arm` from its first measured run (None: not known)."""
    first = next((e for e in entries if e.profile == arm and not e.error), None)
    return None if first is None else arm_prediction(request, first, engine, counted, fresh)


# --- before a boot ---------------------------------------------------------------------------


@dataclass(frozen=True)
class MeasuredPool:
    """A boot's KV pool and the settings it booted with (the profile's args with the boot's
    own on top, and the profile's env), as tune compares them with an arm's."""

    tokens: int
    block_size: int
    where: str  # "the knee's boot", "arm chunk-4096's boot"
    args: Mapping[str, ArgValue]
    env: Mapping[str, str]
    max_model_len: int | None


def _set(args: Mapping[str, ArgValue]) -> dict[str, ArgValue]:
    """The args that are set (None: the arm leaves the engine's default)."""
    return {k: v for k, v in args.items() if v is not None}


def pool_is_context(engine: EngineAdapter) -> bool:
    """Whether the engine's pool is the context it is given (llama.cpp: `c` cells, whatever
    their type), not what a memory budget holds (vLLM's gpu-memory-utilization)."""
    return engine.memory.gmu is None


def pool_neutral(engine: EngineAdapter) -> frozenset[str]:
    """The args that do not move the pool (an allow-list): the scheduler's knobs, the shared
    pool's switch (llama.cpp's kv-unified: the same total context, shared or split), and the
    context where the engine sizes its pool by a memory budget (vLLM); where the pool is the
    context (llama.cpp) it scales with it instead (pool_before_boot). On a GPU the step budget
    moves the activation peak and so the pool a little (the H200 sitting: 772,720-781,520
    tokens over its arms): the prediction before a boot is about, not exact."""
    s, m = engine.scheduler, engine.memory
    knobs = {s.batched_tokens, s.max_num_seqs, s.long_prefill_threshold, s.adaptive_threshold,
             s.partial_prefills, s.long_partial_prefills, s.micro_batch, m.shared_pool,
             m.max_model_len}
    return frozenset(k for k in knobs if k)


def _dtype(args: Mapping[str, ArgValue], name: str | None) -> str | None:
    value = args.get(name) if name else None
    return None if value is None else str(value)


def kv_scale(measured: Mapping[str, ArgValue], arm: Mapping[str, ArgValue],
             engine: EngineAdapter) -> float | None:
    """How many times the tokens of a pool measured with `measured`'s KV dtype the same memory
    holds with `arm`'s (fp8 from bf16: 2); 1 where the block count is fixed or the pool is the
    context (the dtype then changes the bytes, not the tokens); None when a dtype is not one
    the model knows."""
    m = engine.memory
    was, now = _dtype(measured, m.kv_cache_dtype), _dtype(arm, m.kv_cache_dtype)
    if was == now or pool_is_context(engine) or (m.kv_blocks and arm.get(m.kv_blocks)
                                                 is not None):
        return 1.0
    model = _dtype(arm, m.dtype)
    try:
        return kv_dtype(was, model).element_bytes / kv_dtype(now, model).element_bytes
    except Sm121Error:
        return None


def context_scale(measured: Mapping[str, ArgValue], arm: Mapping[str, ArgValue],
                  engine: EngineAdapter) -> float | None:
    """How many times the tokens of the measured pool the arm's gets from its context: 1 where
    a memory budget sizes the pool (vLLM) or the context is the same; the ratio of the total
    contexts where the pool is the context (llama.cpp); None where one of them is the engine's
    default (not known before the boot)."""
    if not pool_is_context(engine):
        return 1.0
    flag = engine.memory.max_model_len
    was, now = measured.get(flag), arm.get(flag)
    if was == now:
        return 1.0
    if (not isinstance(was, int) or not isinstance(now, int) or isinstance(was, bool)
            or isinstance(now, bool) or was <= 0 or now <= 0):
        return None
    return now / was


def _context(args: Mapping[str, ArgValue], engine: EngineAdapter) -> int | None:
    """The context one request may use (llama.cpp: the total over its slots)."""
    return engine.memory.per_request_context(args)


def pool_before_boot(args: Mapping[str, ArgValue], env: Mapping[str, str],
                     measured: Sequence[MeasuredPool], engine: EngineAdapter
                     ) -> tuple[Pool, MeasuredPool] | None:
    """The pool an arm of these args and env should get, from the latest boot measured with
    the same memory settings (every arg outside `pool_neutral` and the KV dtype equal, the
    same env), scaled to the arm's KV dtype, or to its context where the pool is the context;
    and that boot. None when no boot measured shares them."""
    neutral = pool_neutral(engine) | {engine.memory.kv_cache_dtype}
    mine = {k: v for k, v in _set(args).items() if k not in neutral}
    for boot in reversed(measured):
        theirs = {k: v for k, v in _set(boot.args).items() if k not in neutral}
        if theirs != mine or dict(boot.env) != dict(env):
            continue
        scale, grown = kv_scale(boot.args, args, engine), context_scale(boot.args, args, engine)
        if scale is None or grown is None:
            return None
        kv = _dtype(args, engine.memory.kv_cache_dtype)
        how = boot.where if scale == 1 else (
            f"{boot.where} x{scale:g} for kv-cache-dtype {kv} (the same memory: "
            f"{scale:g} times the tokens)")
        if grown != 1:
            how = (f"{how} x{grown:g} for {engine.memory.max_model_len} "
                   f"{args.get(engine.memory.max_model_len)} (the pool is the context)")
        return Pool(int(boot.tokens * scale * grown), boot.block_size, how), boot
    return None


def predict_before_boot(request: TuneRequest, args: Mapping[str, ArgValue],
                        env: Mapping[str, str], measured: Sequence[MeasuredPool],
                        engine: EngineAdapter, counted: CountedPrompt | None = None,
                        fresh: FreshRate | None = None) -> Capacity | None:
    """An arm's prediction before its boot (`counted`: the knee engine's count of the first
    prompt, else the longest session; `fresh`: the knee's rate for a fresh prompt of that
    length, else the cold start is not known); None when no boot measured its memory settings
    or its context is not known."""
    found = pool_before_boot(args, env, measured, engine)
    if found is None:
        return None
    pool, boot = found
    max_len = _context(args, engine) or (None if _context(boot.args, engine)
                                         else boot.max_model_len)
    if not max_len:  # the arm leaves the context to the engine, the boot did not
        return None
    knobs = knobs_from_args(_set(args), engine.scheduler, engine.memory.kv_cache_dtype)
    shape = working_session(request.workload, request.turns or 6, max_len, counted)
    return predict(pool, shape, knobs, slo_ttft_s=slo_ttft(request.slo), agents=request.agents,
                   fresh_rate=fresh)
