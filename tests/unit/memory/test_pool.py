"""The KV pool in tokens, as vLLM reports it: whole blocks, concurrency x max-model-len."""

from __future__ import annotations

from sm121.memory.budget import GIB
from sm121.memory.kv import KvLayout, Sharding, kv_dtype, kv_layout
from sm121.memory.pool import kv_bytes_for, kv_pool, largest_context, request_bytes
from sm121.models.tiny import ARCHITECTURE

TINY = kv_layout({**ARCHITECTURE}, kv_dtype("auto", "bfloat16"), Sharding())


def test_tiny_model_2gib_pool_matches_the_engine_log() -> None:
    # vLLM CPU log: "CPU KV cache size: 4,194,304 tokens, Maximum concurrency for 65,536
    # tokens per request: 64.00x"
    pool = kv_pool(TINY, 2 * GIB, 128, 65536, 2048)
    assert (pool.tokens, pool.max_concurrency) == (4_194_304, 64.0)
    assert pool.num_blocks == 32_768


def test_max_model_len_off_the_block_grid_costs_whole_blocks() -> None:
    pool = kv_pool(TINY, 1 * GIB, 96, 50_000, 2048)
    blocks = GIB // (512 * 96)
    per_request = -(-50_000 // 96)
    assert pool.num_blocks == blocks
    assert pool.tokens == int(blocks / per_request * 50_000)
    assert pool.tokens < blocks * 96  # the partial last block of each request is lost


def test_largest_context_is_the_whole_pool_for_full_attention() -> None:
    assert largest_context(TINY, 2 * GIB, 128, 2048) == 4_194_304
    assert largest_context(TINY, 0, 128, 2048) == 0


def test_sliding_windows_raise_concurrency_at_long_context() -> None:
    hybrid = KvLayout(full_bytes_per_token=256, sliding=((1024, 256),), dcp=1,
                      attention="gqa", dtype="bfloat16", layers=2)
    full = KvLayout(full_bytes_per_token=512, sliding=(), dcp=1, attention="gqa",
                    dtype="bfloat16", layers=2)
    assert kv_pool(hybrid, GIB, 128, 65536, 2048).max_concurrency > \
        1.9 * kv_pool(full, GIB, 128, 65536, 2048).max_concurrency
    # a short request fits in the window: it costs the same, plus the one block vLLM adds
    # because a window need not start on a block boundary
    extra = request_bytes(hybrid, 512, 128, 0) - request_bytes(full, 512, 128, 0)
    assert extra == 256 * 128


def test_bytes_for_a_load_scales_with_agents() -> None:
    assert kv_bytes_for(TINY, 4, 131072, 128, 2048) == 4 * 131072 * 512
