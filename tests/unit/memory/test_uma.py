"""The UMA gate: a vLLM reading MemFree against one reading MemAvailable."""

from __future__ import annotations

import pytest

from sm121.memory.uma import GateInput, describe, predict_gate

GIB_KIB = 1024 * 1024


def gate(free: float, available: float, needed: float) -> GateInput:
    return GateInput(mem_total_kib=int(119.6 * GIB_KIB), mem_free_kib=int(free * GIB_KIB),
                     mem_available_kib=int(available * GIB_KIB), gmu=0.78, weights_gib=77.7,
                     reserve_gib=3.63, kv_needed_gib=needed, max_model_len=262144)


def test_page_cache_hides_memory_from_a_memfree_reader() -> None:
    prediction = predict_gate(gate(free=82.0, available=100.6, needed=1.17))
    assert prediction.will_refuse
    assert prediction.memfree.kv_seen_gib == pytest.approx(82.0 - 77.7 - 3.63, abs=0.01)
    assert not prediction.memavailable.refuses
    assert prediction.after_drop_caches.kv_seen_gib == pytest.approx(0.78 * 119.6 - 81.33, abs=0.01)
    assert prediction.page_cache_gib == pytest.approx(18.6, abs=0.01)
    assert "will refuse" in describe(prediction)


def test_the_engine_never_takes_more_than_gmu_even_with_free_memory() -> None:
    prediction = predict_gate(gate(free=115.0, available=116.0, needed=20.0))
    assert prediction.memfree.budget_gib == pytest.approx(0.78 * 119.6)
    assert prediction.will_refuse and prediction.memavailable.refuses  # 20 GiB never fits
