"""The fp8 KV arm (pure): where the prediction before any boot says KV binds for the
baseline, tune adds an arm that is the baseline with the engine's KV dtype flag set to its fp8
value. fp8 halves the bytes a token takes, so the same memory holds about twice the sessions
(memory/capacity.py's KV lever). It changes the model's numbers too (vLLM: "it may cause
accuracy drop without a proper scaling factor"), which its `why` says.

No arm, and the reason said, where the engine has no fp8 KV type (llama.cpp), its release
takes no such flag, the baseline's pool is not known before a boot, KV does not bind, or the
baseline's KV is already 8-bit or smaller. An engine that refuses fp8 at boot (vLLM's CPU
build without AVX-512 or AMX) fails that arm's boot, which tune records and reports with the
engine's reason; the other arms go on."""

from __future__ import annotations

from collections.abc import Mapping

from sm121.bench.tune.candidates import Candidate
from sm121.engines.adapter import EngineAdapter
from sm121.errors import Sm121Error
from sm121.memory.capacity import Capacity
from sm121.memory.capacity_types import Resource
from sm121.memory.kv import kv_dtype
from sm121.recipes.schema import ArgValue

FP8_ARM = "kv-fp8"


def fp8_arm(baseline: Candidate, merged: Mapping[str, ArgValue], prediction: Capacity | None,
            engine: EngineAdapter, flags: frozenset[str]) -> tuple[Candidate | None, str]:
    """(the arm, or None; the sentence tune prints and reports either way). `merged`: the
    baseline's engine args as it boots; `flags`: what the recipe's engine release takes."""
    m = engine.memory
    flag, fp8 = m.kv_cache_dtype, m.kv_fp8
    if fp8 is None:
        return None, (f"no fp8 KV arm: {engine.label} has no fp8 KV cache type (its "
                      f"`{flag}` takes none)")
    if flag not in flags:
        return None, f"no fp8 KV arm: this {engine.label} release takes no --{flag}"
    if prediction is None or prediction.predicted is None or prediction.binding is None:
        return None, (f"no fp8 KV arm: {baseline.name}'s capacity is not known before its "
                      "boot (no boot measured its memory settings)")
    if prediction.binding is not Resource.KV:
        return None, (f"no fp8 KV arm: KV does not bind for {baseline.name} (predicted "
                      f"{prediction.predicted}: {prediction.binding.value} binds)")
    now = merged.get(flag)
    try:
        small = now is not None and kv_dtype(str(now), None).element_bytes <= 1
    except Sm121Error:  # a dtype the model does not know: not ours to halve
        small = True
    if small:
        return None, f"no fp8 KV arm: {baseline.name}'s KV is already {now}"
    arm = Candidate(
        FP8_ARM, baseline.base, {**baseline.args, flag: fp8},
        f"{baseline.name} with {flag} {fp8}: half the bytes a token, so about twice the "
        f"sessions in the same memory; KV binds for {baseline.name} (predicted "
        f"{prediction.predicted}); fp8 KV may change the model's outputs", "KV lever",
        (flag,))
    return arm, (f"fp8 KV arm {FP8_ARM}: KV binds for {baseline.name} (predicted "
                 f"{prediction.predicted}), so {baseline.name} with {flag} {fp8} is an arm")
