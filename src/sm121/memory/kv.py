"""KV bytes per token, from a model's config.json: standard attention and GQA, MLA latents,
sliding-window layers, and the KV dtype (fp16/bf16, fp8, nvfp4) with its scale overhead.

The numbers follow how vLLM sizes a KV page: K and V per KV head for standard attention,
one latent vector (no separate V) for MLA. Everything here is per rank: TP splits KV heads
(MLA latents are replicated), PP splits layers, and decode-context-parallel splits tokens.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sm121.errors import Sm121Error

# Bytes per stored element of the KV cache, and the scale bytes per (token, head, K-or-V).
_DTYPE_BYTES = {"float32": 4.0, "fp32": 4.0, "float16": 2.0, "fp16": 2.0, "half": 2.0,
                "bfloat16": 2.0, "bf16": 2.0, "float": 4.0}


@dataclass(frozen=True)
class KvDtype:
    name: str
    element_bytes: float  # data bytes per element
    scale_bytes_per_head: float = 0.0  # per token, per head, per K/V side

    def head_bytes(self, head_dim: int) -> float:
        """Bytes one head of one side (K or V) takes for one token."""
        return head_dim * self.element_bytes + self.scale_bytes_per_head


def kv_dtype(kv_cache_dtype: str | None, model_dtype: str | None) -> KvDtype:
    """`--kv-cache-dtype` as vLLM spells it; `auto` stores KV in the model's dtype."""
    name = (kv_cache_dtype or "auto").lower()
    if name == "auto":
        base = (model_dtype or "bfloat16").lower().replace("torch.", "")
        if base == "auto":
            base = "bfloat16"
        if base not in _DTYPE_BYTES:
            raise Sm121Error(f"unknown model dtype {base!r} for the KV cache",
                             f"one of: {', '.join(sorted(_DTYPE_BYTES))}")
        return KvDtype(base, _DTYPE_BYTES[base])
    if name in _DTYPE_BYTES:
        return KvDtype(name, _DTYPE_BYTES[name])
    if name.startswith("nvfp4"):
        # Packed fp4 data (half a byte) plus one fp8 block scale per 16 elements.
        return KvDtype(name, 0.5 + 1 / 16)
    if name.endswith("_per_token_head") and name.startswith(("fp8", "int8")):
        # One float32 scale per token and head, for K and for V.
        return KvDtype(name, 1.0, scale_bytes_per_head=4.0)
    if name.startswith("fp8"):
        return KvDtype(name, 1.0)  # one per-tensor scale: negligible
    raise Sm121Error(f"unknown kv-cache-dtype {name!r}",
                     "auto, bfloat16, float16, fp8 (fp8_e4m3, fp8_e5m2), nvfp4, "
                     "fp8_per_token_head, int8_per_token_head")


@dataclass(frozen=True)
class Sharding:
    tp: int = 1
    pp: int = 1
    dcp: int = 1


@dataclass(frozen=True)
class KvLayout:
    """Per-rank KV cost. Full-attention layers grow with the context; each sliding-window
    layer holds at most its window (plus the tokens in flight)."""

    full_bytes_per_token: float  # stored per token on this rank (DCP: each rank stores 1/dcp)
    sliding: tuple[tuple[int, float], ...]  # (window, bytes per token) per sliding layer
    dcp: int
    attention: str  # "mla" or "gqa" (standard attention is GQA with groups of 1)
    dtype: str
    layers: int
    # (tokens per state, bytes per state) per compressed layer (DeepSeek-V4's compress_ratios)
    compressed: tuple[tuple[int, float], ...] = ()

    @property
    def bytes_per_token(self) -> float:
        """Per context token, as if it fit in every window: the cost of a short request."""
        return (self.full_bytes_per_token / self.dcp + sum(b for _, b in self.sliding)
                + sum(b / r for r, b in self.compressed))

    def describe(self) -> str:
        if self.attention == "calibrated":
            return (f"{self.full_bytes_per_token:,.0f} B per pool token, calibrated "
                    f"{self.dtype} (config.json is not on this machine)")
        parts = [f"{self.attention.upper()}, {self.layers} layers/rank, KV {self.dtype}",
                 f"{self.full_bytes_per_token:,.0f} B/token in full-attention layers"]
        if self.sliding:
            windows = sorted({w for w, _ in self.sliding})
            parts.append(f"{len(self.sliding)} sliding-window layers (window "
                         f"{', '.join(map(str, windows))}) at "
                         f"{sum(b for _, b in self.sliding):,.0f} B/token within the window")
        if self.compressed:
            ratios = sorted({r for r, _ in self.compressed})
            parts.append(f"{len(self.compressed)} compressed layers (one state per "
                         f"{', '.join(map(str, ratios))} tokens)")
        if self.dcp > 1:
            parts.append(f"tokens split over {self.dcp} DCP ranks")
        return "; ".join(parts)


def text_config(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """Multimodal configs keep the language model under text_config."""
    inner = config.get("text_config")
    return inner if isinstance(inner, Mapping) and "num_hidden_layers" in inner else config


def kv_layout(config: Mapping[str, Any], dtype: KvDtype, sharding: Sharding) -> KvLayout:
    cfg = text_config(config)
    layers = _int(cfg, "num_hidden_layers")
    per_layer, attention = _per_layer_bytes(cfg, dtype, sharding.tp)
    kinds = _layer_kinds(cfg, layers)
    rank_layers = math.ceil(layers / sharding.pp)
    # PP gives each rank a contiguous slice; the first rank's slice stands for all of them.
    kinds = kinds[:rank_layers]
    window = cfg.get("sliding_window")
    ratios = cfg.get("compress_ratios")
    if isinstance(ratios, list) and len(ratios) == layers and window:
        return _compressed_layout(cfg, ratios[:rank_layers], int(window), per_layer, attention,
                                  dtype, sharding)
    sliding = tuple((int(window), per_layer) for k in kinds if k == "sliding" and window)
    full = per_layer * sum(1 for k in kinds if k != "sliding" or not window)
    return KvLayout(full_bytes_per_token=full, sliding=sliding, dcp=sharding.dcp,
                    attention=attention, dtype=dtype.name, layers=rank_layers)


def _compressed_layout(cfg: Mapping[str, Any], ratios: list[Any], window: int,
                       per_layer: float, attention: str, dtype: KvDtype,
                       sharding: Sharding) -> KvLayout:
    """DeepSeek-V4: every layer keeps a sliding window of latents, and a layer whose
    compress ratio r > 1 also keeps one compressed latent per r tokens (vLLM's
    MLAAttentionSpec with tokens_per_state = r). Not counted: the indexer's and the
    compressor's own small caches."""
    head = int(cfg.get("head_dim") or 0)
    state = dtype.head_bytes(head) if head else per_layer
    compressed = tuple((int(r), state) for r in ratios if int(r) > 1)
    return KvLayout(full_bytes_per_token=0.0, sliding=tuple((window, state) for _ in ratios),
                    dcp=sharding.dcp, attention=attention, dtype=dtype.name, layers=len(ratios),
                    compressed=compressed)


def _per_layer_bytes(cfg: Mapping[str, Any], dtype: KvDtype, tp: int) -> tuple[float, str]:
    if cfg.get("kv_lora_rank"):
        # MLA caches one compressed latent plus the decoupled RoPE key, shared by all heads:
        # TP does not split it (every rank holds the whole latent).
        latent = int(cfg["kv_lora_rank"]) + int(cfg.get("qk_rope_head_dim") or 0)
        return dtype.head_bytes(latent), "mla"
    heads = _int(cfg, "num_attention_heads")
    kv_heads = int(cfg.get("num_key_value_heads") or heads)
    head_dim = int(cfg.get("head_dim") or _int(cfg, "hidden_size") // heads)
    head_dim_v = int(cfg.get("v_head_dim") or head_dim)
    # Fewer KV heads than TP ranks: each rank keeps a replica of one head.
    rank_heads = max(1, kv_heads // tp)
    return rank_heads * (dtype.head_bytes(head_dim) + dtype.head_bytes(head_dim_v)), "gqa"


def _layer_kinds(cfg: Mapping[str, Any], layers: int) -> list[str]:
    types = cfg.get("layer_types")
    if isinstance(types, list) and len(types) == layers:
        return ["sliding" if "sliding" in str(t) else "full" for t in types]
    pattern = cfg.get("sliding_window_pattern")
    if isinstance(pattern, int) and pattern > 1:
        # Every pattern-th layer is global, the others slide (Gemma-style).
        return ["full" if (i + 1) % pattern == 0 else "sliding" for i in range(layers)]
    if cfg.get("sliding_window") and cfg.get("use_sliding_window", True):
        return ["sliding"] * layers
    return ["full"] * layers


def _int(cfg: Mapping[str, Any], key: str) -> int:
    value = cfg.get(key)
    if not isinstance(value, int):
        raise Sm121Error(f"config.json has no integer {key!r}",
                         "the memory planner needs the model's architecture from config.json")
    return value
