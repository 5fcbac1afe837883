"""The planner end to end on built-in recipes: the field's GB10 figures and the tiny model."""

from __future__ import annotations

import pytest

from sm121.memory.calibration import Observation
from sm121.memory.planner import MemoryRequest, NodeMemory, plan_memory
from sm121.memory.solve import parse_load, solve
from sm121.recipes.loader import load_recipe
from sm121.sizing.calibration_store import load_observations, save_observation
from sm121.sizing.inputs import memory_request

DS4 = "deepseek-v4-flash-eugr-agent"


def ds4(profile: str = "agent", **overrides: object) -> MemoryRequest:
    return memory_request(load_recipe(DS4), profile, overrides)  # type: ignore[arg-type]


def test_gmu_070_flags_the_setting_and_explains_the_kv_at_078() -> None:
    plan = plan_memory(ds4(**{"gpu-memory-utilization": 0.70}))
    assert plan.kv_gib == pytest.approx(2.39, abs=0.01)
    gmu = [f for f in plan.findings if f.field == "args.gpu-memory-utilization"]
    assert gmu and "KV lever, not a safety lever" in gmu[0].message
    assert "11.96" in gmu[0].message and gmu[0].fix.endswith("0.78")
    text = "\n".join(plan.explanation)
    assert "at the recipe's ceiling 0.78 (measured on DS4 stack" in text
    assert "the KV would be 11.96 GiB" in text
    assert "(0.78 - 0.70) x 119.6 GiB" in text
    assert "calibrated: 3.63 GiB" in plan.reserve_how


def test_ceiling_plan_matches_the_field_pools_and_has_no_gmu_warning() -> None:
    plan = plan_memory(ds4())
    assert plan.kv_gib == pytest.approx(11.96, abs=0.01)
    assert not [f for f in plan.findings if "gpu-memory-utilization" in f.field]
    observed = {c.source: c for c in plan.comparisons if c.observed_tokens}
    for comparison in observed.values():
        assert abs(comparison.error_pct or 100) < 0.1
    # the 8192 chunk costs activation memory: a smaller pool than 2048 at the same GMU
    batch = plan_memory(ds4("batch"))
    assert batch.pool_tokens and plan.pool_tokens and batch.pool_tokens < plan.pool_tokens


def test_tiny_cpu_plan_uses_the_explicit_kv_space() -> None:
    plan = plan_memory(memory_request(load_recipe("tiny-cpu"), "agent"))
    assert plan.mode == "explicit" and plan.kv_gib == 2.0
    assert (plan.pool_tokens, plan.max_concurrency) == (4_194_304, 64.0)
    fp8 = plan_memory(memory_request(load_recipe("tiny-cpu"), "agent",
                                     {"kv-cache-dtype": "fp8", "block-size": 64}))
    assert fp8.pool_tokens == 8_388_608


def test_a_node_too_small_for_the_weights_is_an_error() -> None:
    plan = plan_memory(memory_request(load_recipe(DS4), "agent",
                                      node=NodeMemory("small", 64.0, "test")))
    assert plan.kv_gib < 0
    assert any("no memory is left for KV" in f.message for f in plan.findings)


def test_solve_finds_a_gmu_or_says_why_not() -> None:
    assert parse_load("agents=4,context=128k").context == 131072
    fits = solve(ds4(), parse_load("agents=4,context=128k"))
    assert fits.feasible and fits.max_model_len == 131072
    assert fits.gpu_memory_utilization is not None and fits.gpu_memory_utilization <= 0.78
    too_big = solve(ds4(), parse_load("agents=6,context=1m"))
    assert not too_big.feasible and "cannot be done" in too_big.reason


def test_calibration_store_round_trip(sm121_home: object) -> None:
    obs = Observation(recipe="tiny-cpu", profile="batch", source="run-x", kv_gib=1.0,
                      kv_explicit=True, pool_tokens=2_097_152, max_model_len=65536)
    save_observation(obs)
    save_observation(obs)  # the same source replaces, never duplicates
    assert [o.source for o in load_observations(load_recipe("tiny-cpu").recipe, "batch")] == ["run-x"]
