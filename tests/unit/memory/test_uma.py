"""The UMA gate: a vLLM reading MemFree against one reading MemAvailable, at start and at the
KV check after loading."""

from __future__ import annotations

import pytest

from sm121.memory.uma import GateInput, describe, predict_gate

GIB_KIB = 1024 * 1024
FIELD_BOOTS = [4.22, 5.18, 5.34]  # the field's three boots: KV found with the cache booked


def gate(free: float, available: float, need: float, memfree: bool = True,
         booked: list[float] | None = None) -> GateInput:
    return GateInput(mem_total_kib=int(119.6 * GIB_KIB), mem_free_kib=int(free * GIB_KIB),
                     mem_available_kib=int(available * GIB_KIB), gmu=0.78,
                     reads_memfree=memfree, version="0.21" if memfree else "0.32",
                     nominal_kv_gib=11.96, booked_kv_gib=booked or [], need_gib=need,
                     max_model_len=262144)


def test_the_kv_found_is_the_median_observed_boot_when_boots_were_observed() -> None:
    prediction = predict_gate(gate(free=82.0, available=100.6, need=9.18, booked=FIELD_BOOTS))
    assert prediction.kv_seen_gib == pytest.approx(5.18)
    assert prediction.will_refuse and not prediction.nominal_refuses
    assert not prediction.start_passes  # 82.0 GiB MemFree < 0.78 x 119.6 = 93.3 GiB
    assert prediction.page_cache_gib == pytest.approx(18.6, abs=0.01)
    assert "will refuse" in describe(prediction) and "4.22 / 5.18 / 5.34" in describe(prediction)


def test_uncalibrated_the_nodes_page_cache_stands_for_the_booking() -> None:
    prediction = predict_gate(gate(free=82.0, available=100.6, need=1.0))
    # 11.96 - 18.6 GiB: nothing is found, printed as 0, never as a negative "observed" figure
    assert prediction.kv_seen_gib == 0.0
    assert prediction.will_refuse and "estimated" in prediction.kv_how


def test_a_memavailable_reader_books_nothing() -> None:
    prediction = predict_gate(gate(free=82.0, available=100.6, need=9.18, memfree=False,
                                   booked=FIELD_BOOTS))
    assert prediction.kv_seen_gib == pytest.approx(11.96) and not prediction.will_refuse
    assert prediction.start_passes and prediction.reads == "MemAvailable"


def test_even_without_booking_a_need_over_the_budget_refuses() -> None:
    prediction = predict_gate(gate(free=115.0, available=116.0, need=18.35, booked=FIELD_BOOTS))
    assert prediction.will_refuse and prediction.nominal_refuses
