"""The KV budget on a GPU node (GMU x total - weights - reserve) and explicit KV sizes."""

from __future__ import annotations

import pytest

from sm121.engines.vllm.adapter import VllmAdapter
from sm121.memory.budget import GIB, Reserve, explicit_kv_bytes, gmu_budget, gmu_for_kv

VLLM_MEMORY = VllmAdapter().memory


def test_field_reserve_from_gmu_070_predicts_kv_at_078() -> None:
    reserve = 0.70 * 119.6 - 77.7 - 2.39  # what the 0.70 boot implies
    assert reserve == pytest.approx(3.63, abs=0.01)
    at_078 = gmu_budget(119.6, 0.78, 77.7, reserve)
    # weights and reserve stay: all of (0.78 - 0.70) x 119.6 GiB goes to KV
    assert at_078.kv_gib == pytest.approx(2.39 + 0.08 * 119.6)
    assert at_078.kv_gib == pytest.approx(11.96, abs=0.01)
    assert gmu_for_kv(at_078.kv_gib, 119.6, 77.7, reserve) == pytest.approx(0.78)


def test_reserve_grows_with_batched_tokens_and_keeps_its_slope_when_shifted() -> None:
    reserve = Reserve(1.0, 0.5, "test")
    assert reserve.at(2048) == pytest.approx(2.0)
    shifted = reserve.shifted_to(3.63, 2048, "calibrated")
    assert shifted.at(2048) == pytest.approx(3.63)
    assert shifted.at(8192) - shifted.at(2048) == pytest.approx(3.0)


@pytest.mark.parametrize(("args", "env", "expected"), [
    ({}, {"VLLM_CPU_KVCACHE_SPACE": "2"}, 2 * GIB),
    ({"kv-cache-memory-bytes": "36864M"}, {}, 36864 * 1024**2),
    ({"kv-cache-memory-bytes": "2g"}, {}, 2 * 10**9),  # lowercase is decimal, as in vLLM
    ({"kv-cache-memory-bytes": 1000}, {}, 1000),
    # the CPU build applies its env var last: it wins over the arg
    ({"kv-cache-memory-bytes": "1G"}, {"VLLM_CPU_KVCACHE_SPACE": "3"}, 3 * GIB),
])
def test_explicit_kv_sizes(args: dict, env: dict, expected: int) -> None:
    found = explicit_kv_bytes(args, env, VLLM_MEMORY)
    assert found is not None and found[0] == expected


def test_no_explicit_size_means_the_gmu_formula() -> None:
    assert explicit_kv_bytes({"gpu-memory-utilization": 0.78}, {}, VLLM_MEMORY) is None
