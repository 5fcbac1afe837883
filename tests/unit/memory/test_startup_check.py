"""vLLM's start-up KV check per engine version, from its source (kv_cache_utils.py
check_enough_kv_cache_memory, kv_cache_interface.py max_memory_usage_bytes): the need of one
request at max-model-len summed over layers, full, sliding, MLA and compressed."""

from __future__ import annotations

import pytest

from sm121.memory.kv import KvLayout, Sharding, kv_dtype, kv_layout
from sm121.memory.startup_check import largest_passing, need_bytes, rules_for, usable_for_check
from sm121.models.random_model import SHAPES

GIB = 1024**3
V021, V032 = rules_for("0.21.0"), rules_for("0.32.0")


def llama8b() -> KvLayout:
    config = {"model_type": "llama", **SHAPES["llama-8b"]}
    return kv_layout(config, kv_dtype(None, "bfloat16"), Sharding())


def test_versions_are_read_from_the_recipes_version_string() -> None:
    assert rules_for("0.21.1rc1.dev339 + DSpark overlay").version == "0.21"
    assert rules_for("0.32.0").null_block and not V021.null_block
    assert V021.reads_memfree_on_uma and not V032.reads_memfree_on_uma
    assert "assumed" in rules_for(None).how


def test_the_h200_boot_one_uniform_group_needs_what_the_pool_divides_by() -> None:
    """The GPU testbed (docs/results/gpu-h200/calibration, vLLM 0.21.0, Llama-8B shape,
    max-model-len 131,072): "Available KV cache memory: 95.46 GiB", "Maximum concurrency for
    131,072 tokens per request: 5.97x". One uniform group: need = KV / concurrency."""
    need = need_bytes(llama8b(), 131072, 16, 2048, V021)
    assert need == 131072 * 131072  # 32 layers x 8 KV heads x (128 + 128) x 2 B per token
    assert 95.46 * GIB / need == pytest.approx(5.97, abs=0.01)


def test_a_sliding_window_holds_its_window_plus_the_in_flight_tokens_per_version() -> None:
    layout = KvLayout(full_bytes_per_token=0, sliding=((4096, 1000.0),), dcp=1,
                      attention="gqa", dtype="bf16", layers=1)
    # 0.21: cdiv(4095 + 2048, 16) + 1 blocks; 0.32: two batches in flight (async scheduling)
    assert need_bytes(layout, 1 << 20, 16, 2048, V021) == (384 + 1) * 16 * 1000
    assert need_bytes(layout, 1 << 20, 16, 2048, V032) == (512 + 1) * 16 * 1000
    # never more than max-model-len
    assert need_bytes(layout, 1000, 16, 2048, V021) == (63 + 1) * 16 * 1000


def test_compressed_layers_store_one_state_per_ratio_tokens() -> None:
    config = {"model_type": "deepseek_v4", "num_hidden_layers": 4, "num_attention_heads": 8,
              "hidden_size": 1024, "kv_lora_rank": 512, "qk_rope_head_dim": 64,
              "head_dim": 512, "sliding_window": 128, "compress_ratios": [1, 4, 128, 4]}
    layout = kv_layout(config, kv_dtype("fp8", None), Sharding())
    assert sorted(r for r, _ in layout.compressed) == [4, 4, 128]
    need = need_bytes(layout, 262144, 256, 2048, V021)
    window = 4 * (-(-2175 // 256) + 1) * 256 * 512  # four windows: cdiv(127 + 2048, 256) + 1
    states = (2 * 262144 // 4 + 262144 // 128) * 512
    assert need == window + states


def test_032_keeps_the_null_block_back_and_the_search_is_the_inverse() -> None:
    layout = llama8b()
    available = 20 * GIB
    assert usable_for_check(available, layout, 16, V032) == available - 16 * 131072
    longest = largest_passing(layout, available, 16, 2048, V021)
    assert need_bytes(layout, longest, 16, 2048, V021) <= available
    assert need_bytes(layout, longest + 16, 16, 2048, V021) > available
