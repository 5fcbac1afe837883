"""The planner against vLLM's own KV pool on the CPU testbed, for three configurations that
differ in KV space, block size and KV dtype: within 2% (the arithmetic matches to the token).

No boot of its own: each configuration is an engine another file needs anyway
(tests/integration/conftest.py says how each differs):
- A: the session engine (KV 2 GiB, block 128, bf16, max-model-len 65536);
- B: `toolless_boot`, test_agent_readiness's (same KV space, block 64, a 1-byte KV dtype or
  float32 where fp8 is not supported): refused by readiness, but its log holds the pool;
- C: `replica_b`, test_gateway_routing_engines' second engine (a recipe copy whose env sets
  VLLM_CPU_KVCACHE_SPACE=1, block 96, max-model-len 50000 off the block grid).
Calibration reads each run's directory (its plan and engine log), so it holds for an engine
stopped or killed since."""

from __future__ import annotations

import json

import pytest
from support import FailedBoot, TinyEngine, run_cli

pytestmark = pytest.mark.integration


def _calibrate(run_id: str) -> dict:
    (check,) = json.loads(run_cli("memory", "calibrate", run_id, "--json").stdout)
    return check


@pytest.fixture(scope="module")
def checks(tiny_engine: TinyEngine, toolless_boot: FailedBoot, replica_b: TinyEngine
           ) -> list[dict]:
    return [_calibrate(tiny_engine.run_id), _calibrate(toolless_boot.run_dir.name),
            _calibrate(replica_b.run_id)]


def test_predicted_pool_within_two_percent_for_each_configuration(checks: list[dict]) -> None:
    assert len(checks) == 3
    observed = {c["observed_tokens"] for c in checks}
    assert len(observed) == 3, "the three configurations must give three different pools"
    for check in checks:
        assert check["observed_tokens"], check
        assert abs(check["error_pct"]) < 2.0, check
        assert check["predicted_concurrency"] == pytest.approx(check["observed_concurrency"],
                                                               rel=0.02)


def test_calibrated_boots_show_up_in_the_memory_plan(checks: list[dict]) -> None:
    plan = json.loads(run_cli("memory", "plan", "tiny-cpu", "--profile", "agent", "--json").stdout)
    sources = {c["source"] for c in plan["comparisons"] if c["observed_tokens"]}
    assert {c["run_id"] for c in checks[:2]} <= sources
    table = run_cli("memory", "calibrate", *[c["run_id"] for c in checks]).stdout
    assert "KV pool: planner against vLLM's log" in table
