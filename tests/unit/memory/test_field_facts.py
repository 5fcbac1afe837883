"""Every memory fact the field measured, as a fixture the planner and the doctor must give
back through the real command lines (`sm121 memory plan`, `sm121 doctor --root FIXTURE`).

Source: the field report (dgx-spark-agent-serving-benchmarks v0.1.1); the observations are
sm121.memory.field's. Which recipe each assumes: deepseek-v4-flash-eugr-agent, profile agent,
GMU 0.78, for the UMA boots too (the report does not name their model; field.py says why).
Tolerances: the 262K need within 10% of 18.35 GiB (the issue's); budgets to 0.01 GiB (the
report's precision); pools to 0.01% (they are what calibrates the pool).

What is calibrated from what, so that a test is not read as more than it is: the need per
token comes from the 262K refusal itself (config.json is not here), so 262K's need is
reproduced by construction; the verdicts at 32K, 64K and 128K, and GMU 0.70's, are not."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support import invoke_cli

HEAD = Path(__file__).resolve().parents[2] / "fixtures" / "hosts" / "gb10-head"
DS4 = "deepseek-v4-flash-eugr-agent"


def plan(*sets: str, profile: str = "agent") -> dict[str, Any]:
    args = [a for s in sets for a in ("--set", s)]
    done = invoke_cli("memory", "plan", DS4, "--profile", profile, *args, "--json", check=False)
    return json.loads(done.stdout)


def gate(context: int) -> dict[str, Any]:
    done = invoke_cli("doctor", "--root", str(HEAD), "--recipe", DS4, "--profile", "agent",
                      "--set", f"max-model-len={context}", "--json", check=False)
    checks = json.loads(done.stdout)["nodes"][0]["checks"]
    return next(c for c in checks if c["check"] == "uma-gate")


@pytest.mark.parametrize(("context", "verdict", "need"), [
    (32768, "boots", 2.29), (65536, "boots", 4.59),
    (131072, "refuses", 9.18), (262144, "refuses", 18.35)])
def test_the_fields_boots_and_refusals(context: int, verdict: str, need: float) -> None:
    check = plan(f"max-model-len={context}")["startup"]
    assert check["need_gib"] == pytest.approx(need, rel=0.10 if context == 262144 else 0.01)
    assert check["booked_kv_gib"] == pytest.approx([4.22, 5.18, 5.34], abs=0.01)
    assert check["budget_gib"] == pytest.approx(5.18, abs=0.01)
    assert ("refuses" if check["refuses"] else "boots") == verdict
    uma = gate(context)
    assert ("will refuse" in uma["summary"]) == (verdict == "refuses")
    assert f"needs {need:.2f} GiB" in uma["summary"] and "finds 5.18 GiB" in uma["summary"]
    assert uma["status"] == ("error" if verdict == "refuses" else "warning")


def test_128k_would_boot_without_the_booking_and_262k_would_not() -> None:
    """The field's open question (does drop_caches let 128K-262K boot?), as the model answers
    it: 128K yes (9.18 of 11.96 GiB), 262K no (18.35 > 11.96)."""
    assert plan("max-model-len=131072")["startup"]["nominal_kv_gib"] > 9.18
    assert plan("max-model-len=262144")["startup"]["nominal_kv_gib"] < 18.35
    fix = next(f["fix"] for f in gate(131072)["findings"] if f["severity"] == "error")
    assert "unverified" in fix and "MemAvailable" in fix


def test_gmu_070_leaves_2_39_gib_and_refuses_well_below_the_pools_533600() -> None:
    memory = plan("gpu-memory-utilization=0.70")
    assert memory["kv_gib"] == pytest.approx(2.39, abs=0.01)
    check = memory["startup"]
    # 2.39 GiB against about 75 KB per token of max-model-len: about 34K even with nothing
    # booked; with the page cache booked as on the field's boots, nothing fits
    assert check["refuses"] and check["largest_context"] == 0
    assert 30_000 < check["nominal_largest_context"] < 533_600 // 10
    error = next(f for f in memory["findings"] if f["field"] == "args.max-model-len")
    assert "533,600" not in error["fix"]
    assert f"{check['nominal_largest_context']:,}" in error["fix"]


@pytest.mark.parametrize(("profile", "observed"), [("agent", 2_669_829), ("batch", 1_598_763)])
def test_the_ab_pools_are_still_reproduced(profile: str, observed: int) -> None:
    memory = plan(profile=profile)
    (row,) = [c for c in memory["comparisons"] if c["observed_tokens"] == observed]
    assert row["predicted_tokens"] == pytest.approx(observed, rel=1e-4)


def test_what_the_model_does_not_reproduce_is_printed() -> None:
    memory = plan()
    text = "\n".join(memory["unreproduced"])
    # the 1.59x of the batch boot does not follow from its own pool
    assert "1,598,763 / 1,048,576 = 1.52x" in text
    # the 1M A/B boots booted; a need linear from 262K's 18.35 GiB says they cannot
    assert "agent-2048 at GMU 0.78: observed booted, the model says it refuses" in text
    # "insufficient for even 32K" at 2.39 GiB, where the linear need is 2.29 GiB
    assert "GMU 0.70 left 2.39 GiB of KV: observed refuses, the model says it boots" in text
    # the shipped 1M profile was observed to boot: that wins, with a warning, not an error
    assert memory["startup"]["observed"].startswith("booted")
    assert not [f for f in memory["findings"] if f["severity"] == "error"]


def doctor_checks(recipe: str) -> dict[str, Any]:
    done = invoke_cli("doctor", "--root", str(HEAD), "--recipe", recipe, "--json", check=False)
    return {c["check"]: c for c in json.loads(done.stdout)["nodes"][0]["checks"]}


def test_glm_52_weights_cannot_stay_cached_and_a_warm_read_does_not_help() -> None:
    """The field: 406 GB on 121 GB nodes, 0.0% in the page cache, MemAvailable 4.1 GB while
    serving. The engine holds 0.78 x 119.6 = 93.3 GiB of the node's memory."""
    check = doctor_checks("glm-5.2")["weights-vs-ram"]
    assert check["status"] == "warning"
    assert "reads 378.1 GiB" in check["summary"] and "93.3 GiB" in check["summary"]
    (finding,) = check["findings"]
    assert "cannot stay in the page cache" in finding["message"]
    assert "warm-read before start does not help" in finding["message"]
    assert "fits" not in check["summary"]


def test_glm_52_load_tax_is_the_whole_checkpoint_per_node_at_the_measured_rate() -> None:
    """The field: ~406 GB per node per serve at ~1.1 GB/s, ~370 s; not size / node count."""
    (finding,) = doctor_checks("glm-5.2")["weights-route"]["findings"]
    message = finding["message"]
    assert "about 369 s" in message and "406.0 GB" in message
    assert "1.10 GB/s (measured in the field" in message
    assert "instanttensor is configured but no boot of this recipe proves it" in message
