"""KV bytes per token from config.json: GQA, MLA, sliding windows, dtypes, sharding."""

from __future__ import annotations

import pytest

from sm121.errors import Sm121Error
from sm121.memory.kv import Sharding, kv_dtype, kv_layout
from sm121.models.tiny import ARCHITECTURE

TINY = {**ARCHITECTURE, "dtype": "bfloat16"}
LLAMA_8B = {"num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
            "hidden_size": 4096}
MLA = {"num_hidden_layers": 61, "num_attention_heads": 128, "kv_lora_rank": 512,
       "qk_rope_head_dim": 64, "hidden_size": 7168}


def per_token(config: dict, kv: str = "auto", tp: int = 1, pp: int = 1, dcp: int = 1) -> float:
    return kv_layout(config, kv_dtype(kv, "bfloat16"), Sharding(tp, pp, dcp)).bytes_per_token


def test_tiny_model_is_512_bytes_per_token_in_bf16() -> None:
    # 2 layers x (K + V) x 1 KV head x 64 dims x 2 bytes
    assert per_token(TINY) == 512


@pytest.mark.parametrize(("dtype", "expected"), [
    ("fp8", 256), ("fp8_e4m3", 256), ("float32", 1024),
    # nvfp4: half a byte per element plus one fp8 scale per 16 elements
    ("nvfp4", 2 * 2 * (64 * 0.5 + 64 / 16)),
    # per-token-head fp8: one byte per element plus a float32 scale per head and side
    ("fp8_per_token_head", 2 * 2 * (64 + 4)),
])
def test_kv_dtypes_and_their_scale_overhead(dtype: str, expected: float) -> None:
    assert per_token(TINY, dtype) == pytest.approx(expected)


def test_gqa_heads_split_over_tp_and_replicate_below_one_head_per_rank() -> None:
    assert per_token(LLAMA_8B) == 32 * 2 * 8 * 128 * 2
    assert per_token(LLAMA_8B, tp=2) == per_token(LLAMA_8B) / 2
    # 8 KV heads over 16 ranks: every rank still holds one whole head
    assert per_token(LLAMA_8B, tp=16) == per_token(LLAMA_8B, tp=8)


def test_mla_caches_one_latent_that_tp_does_not_split() -> None:
    assert per_token(MLA) == 61 * (512 + 64) * 2
    assert per_token(MLA, tp=4) == per_token(MLA)
    assert per_token(MLA, "fp8") == 61 * (512 + 64)


def test_pp_splits_layers_and_dcp_splits_tokens() -> None:
    assert per_token(LLAMA_8B, pp=2) == per_token(LLAMA_8B) / 2
    assert per_token(MLA, dcp=4) == pytest.approx(per_token(MLA) / 4)


def test_sliding_window_layers_are_counted_apart() -> None:
    config = {**LLAMA_8B, "sliding_window": 4096,
              "layer_types": ["sliding_attention", "full_attention"] * 16}
    layout = kv_layout(config, kv_dtype("auto", "bfloat16"), Sharding())
    assert len(layout.sliding) == 16 and layout.sliding[0][0] == 4096
    assert layout.full_bytes_per_token == per_token(LLAMA_8B) / 2
    assert "sliding-window" in layout.describe()


def test_qwen_style_disabled_sliding_window_is_full_attention() -> None:
    config = {**LLAMA_8B, "sliding_window": 4096, "use_sliding_window": False}
    assert not kv_layout(config, kv_dtype("auto", "bfloat16"), Sharding()).sliding


def test_multimodal_configs_use_the_text_config() -> None:
    assert per_token({"text_config": LLAMA_8B, "model_type": "vlm"}) == per_token(LLAMA_8B)


def test_unknown_dtype_and_missing_architecture_are_clear_errors() -> None:
    with pytest.raises(Sm121Error, match="kv-cache-dtype"):
        kv_dtype("int3", None)
    with pytest.raises(Sm121Error, match="num_hidden_layers"):
        per_token({"hidden_size": 8})
