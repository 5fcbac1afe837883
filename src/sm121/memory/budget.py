"""The KV budget: what is left for KV once weights and the activation reserve are placed.

On a GPU (GB10 included) vLLM requests gpu-memory-utilization x total memory, places the
weights, runs a profiling pass at max-num-batched-tokens, and gives the rest to KV:

    KV = GMU x total - weights - reserve(max-num-batched-tokens)

Weights and reserve do not depend on GMU, so on a node where weights dominate, GMU is a KV
lever: each 0.01 of GMU is 0.01 x total of KV. An explicit KV size (vLLM's
kv-cache-memory-bytes, or VLLM_CPU_KVCACHE_SPACE on the CPU build) replaces the formula.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sm121.engines.adapter import MemoryFlags

GIB = 1024**3
MIB = 1024**2
# GB10 (DGX Spark): 128 GB of unified memory, of which Linux sees about 119.6 GiB.
GB10_TOTAL_GIB = 119.6
# Uncalibrated reserve: CUDA context, NCCL and allocator slack; graphs come on top.
DEFAULT_BASE_GIB = 1.5


@dataclass(frozen=True)
class Reserve:
    """Non-KV, non-weight memory: a fixed part plus activations per batched token."""

    base_gib: float
    per_token_mib: float  # activation memory per token of max-num-batched-tokens
    source: str

    def at(self, batched_tokens: int) -> float:
        return self.base_gib + self.per_token_mib * batched_tokens / 1024

    def shifted_to(self, reserve_gib: float, batched_tokens: int, source: str) -> Reserve:
        """Keep the slope, move the level so that at(batched_tokens) == reserve_gib."""
        return Reserve(reserve_gib - self.per_token_mib * batched_tokens / 1024,
                       self.per_token_mib, source)


def default_reserve(config: Mapping[str, Any] | None) -> Reserve:
    """A rough activation estimate from the architecture, until a boot calibrates it.

    Per batched token the profiling pass holds a few hidden-size vectors (residual, norms,
    attention in/out) and the MLP's intermediate activations (for MoE: the routed experts'
    width x experts per token), in 16-bit values."""
    if not config:
        return Reserve(DEFAULT_BASE_GIB, 0.25, "default estimate (no config.json)")
    cfg = config.get("text_config") if isinstance(config.get("text_config"), Mapping) else config
    assert cfg is not None
    hidden = int(cfg.get("hidden_size") or 4096)
    if cfg.get("num_experts_per_tok") and cfg.get("moe_intermediate_size"):
        ffn = int(cfg["moe_intermediate_size"]) * int(cfg["num_experts_per_tok"])
    else:
        ffn = int(cfg.get("intermediate_size") or 4 * hidden)
    per_token = 2 * (10 * hidden + 3 * ffn)
    return Reserve(DEFAULT_BASE_GIB, per_token / MIB,
                   "default estimate from config.json (uncalibrated: boot once and calibrate)")


@dataclass(frozen=True)
class Budget:
    mode: str  # "gmu" or "explicit"
    kv_gib: float
    total_gib: float | None = None
    gmu: float | None = None
    weights_gib: float | None = None
    reserve_gib: float | None = None
    explicit_from: str = ""

    @property
    def requested_gib(self) -> float | None:
        if self.total_gib is None or self.gmu is None:
            return None
        return self.total_gib * self.gmu

    @property
    def kv_bytes(self) -> int:
        return max(0, int(self.kv_gib * GIB))


def gmu_budget(total_gib: float, gmu: float, weights_gib: float, reserve_gib: float) -> Budget:
    kv = total_gib * gmu - weights_gib - reserve_gib
    return Budget("gmu", kv, total_gib, gmu, weights_gib, reserve_gib)


def gmu_for_kv(kv_gib: float, total_gib: float, weights_gib: float, reserve_gib: float) -> float:
    """The GMU at which the budget formula leaves `kv_gib` for KV."""
    return (kv_gib + weights_gib + reserve_gib) / total_gib


def explicit_kv_bytes(args: Mapping[str, Any], env: Mapping[str, str],
                      flags: MemoryFlags) -> tuple[int, str] | None:
    """An explicit KV size, if the plan sets one (`flags`: the engine's names). A CPU
    build's env var wins over the arg: vLLM applies it last (a legacy setting, whole GiB)."""
    space = env.get(flags.kv_space_env, "") if flags.kv_space_env else ""
    if space.strip():
        return int(space) * GIB, f"{flags.kv_space_env}={space} GiB"
    value = flags.value(args, flags.kv_bytes)
    if value is not None:
        return _parse_bytes(value), f"{flags.kv_bytes}={value}"
    return None


def _parse_bytes(value: Any) -> int:
    """vLLM's spelling: plain bytes, or a suffix where lowercase is decimal (2g = 2e9) and
    uppercase binary (2G = 2 GiB)."""
    text = str(value).strip()
    scales = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12,
              "K": 1024, "M": MIB, "G": GIB, "T": 1024 * GIB}
    if text[-1:] in scales:
        return int(float(text[:-1]) * scales[text[-1]])
    return int(float(text))
