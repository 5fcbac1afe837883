"""Every memory fact the field measured, tied to its stack, as a fixture the planner and the
doctor must give back through the real command lines (`sm121 memory plan`, `sm121 doctor
--root FIXTURE`).

Sources (memory/field.py; reference/field-sources.md): the anchor's results file names the
stack of each figure. The UMA gate's boots (section 6) were Laguna S 2.1's, on one node with
vLLM 0.25.1; DS4 (2 nodes, TP=2, vLLM 0.21.1 + DSpark) booted its 1M agent profile (section 4).
What is calibrated from what, so that a test is not read as more than it is: Laguna's need per
token comes from its 262K refusal, so 262K's 18.35 GiB is reproduced by construction; its
verdicts at 32K-128K are not. DS4's need is measured nowhere: its 1M boot bounds it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support import invoke_cli

from sm121.memory.field import DS4_STACK, LAGUNA_STACK, builtin_observations
from sm121.recipes.loader import load_recipe
from sm121.sizing.calibration_store import load_observations

HEAD = Path(__file__).resolve().parents[2] / "fixtures" / "hosts" / "gb10-head"
DS4 = "deepseek-v4-flash-eugr-agent"
LAGUNA = "laguna-s-2.1"


def plan(recipe: str, *sets: str, profile: str | None = None) -> dict[str, Any]:
    args = [a for s in sets for a in ("--set", s)] + (["--profile", profile] if profile else [])
    done = invoke_cli("memory", "plan", recipe, *args, "--json", check=False)
    return json.loads(done.stdout)


def doctor(recipe: str, *sets: str) -> tuple[int, dict[str, Any]]:
    args = [a for s in sets for a in ("--set", s)]
    done = invoke_cli("doctor", "--root", str(HEAD), "--recipe", recipe, *args, "--json",
                      check=False)
    checks = json.loads(done.stdout)["nodes"][0]["checks"]
    return done.returncode, {c["check"]: c for c in checks}


def test_every_field_observation_names_its_stack_and_source() -> None:
    for obs in builtin_observations():
        assert obs.stack is not None and obs.origin is not None and obs.origin.section
    uma = [o for o in builtin_observations() if o.page_cache_booked]
    assert {o.stack for o in uma} == {LAGUNA_STACK}
    assert sorted(o.kv_gib or 0 for o in uma if o.kv_gib) == [4.22, 5.18, 5.34]


def test_an_observation_calibrates_only_its_own_stack() -> None:
    ds4 = load_observations(load_recipe(DS4).recipe)
    assert ds4 and {o.stack for o in ds4} == {DS4_STACK}
    laguna = load_observations(load_recipe(LAGUNA).recipe)
    assert laguna and {o.stack for o in laguna} == {LAGUNA_STACK}
    assert not load_observations(load_recipe("tiny-cpu").recipe)


@pytest.mark.parametrize("context", [None, "max-model-len=131072"])
def test_ds4_passes_what_it_booted(context: str | None) -> None:
    """The field booted DS4's agent profile at 1M (2,669,829-token pool): no uma-gate error at
    1M or 128K, and the need is said to be assumed, bounded by that boot."""
    sets = [context] if context else []
    code, checks = doctor(DS4, *sets)
    gate = checks["uma-gate"]
    assert code == 0 and gate["status"] != "error"
    assert "booted at max-model-len 1,048,576" in gate["summary"]
    assert "not measured on this stack" in gate["summary"]
    memory = plan(DS4, *sets)
    assert not [f for f in memory["findings"] if f["severity"] == "error"]
    check = memory["startup"]
    assert check["need_assumed"] and check["bound"] and check["refuses"] is False


@pytest.mark.parametrize(("context", "verdict", "need"), [
    (32768, "boots", 2.29), (65536, "boots", 4.59),
    (131072, "refuses", 9.18), (262144, "refuses", 18.35)])
def test_laguna_boots_and_refusals(context: int, verdict: str, need: float) -> None:
    check = plan(LAGUNA, f"max-model-len={context}")["startup"]
    assert check["need_gib"] == pytest.approx(need, rel=0.01)
    assert check["booked_kv_gib"] == pytest.approx([4.22, 5.18, 5.34], abs=0.01)
    assert ("refuses" if check["refuses"] else "boots") == verdict
    code, checks = doctor(LAGUNA, f"max-model-len={context}")
    uma = checks["uma-gate"]
    assert ("will refuse" in uma["summary"]) == (verdict == "refuses")
    assert f"needs {need:.2f} GiB" in uma["summary"] and "finds 5.18 GiB" in uma["summary"]
    assert uma["status"] == ("error" if verdict == "refuses" else "ok")
    assert code == (1 if verdict == "refuses" else 0)


def test_laguna_drop_caches_is_neither_yes_nor_no() -> None:
    """The field's open question: does drop_caches let 128K-262K boot? Unverified."""
    _, checks = doctor(LAGUNA, "max-model-len=262144")
    fix = next(f["fix"] for f in checks["uma-gate"]["findings"] if f["severity"] == "error")
    assert "unverified in the field" in fix and "neither a yes nor a no" in fix
    text = "\n".join(plan(LAGUNA, "max-model-len=262144")["explanation"])
    assert "unverified in the field" in text and "it boots" not in text


def test_the_booking_gap_against_the_fields_20_gb_is_flagged() -> None:
    """The boots' KV against the budget with an assumed reserve gives ~23.7 GiB booked; the
    field says ~20 GB (18.6 GiB): the plan says which number is assumed."""
    text = "\n".join(plan(LAGUNA)["unreproduced"])
    assert "is 23.7 GiB; the field says ~20 GB (18.6 GiB)" in text
    assert "assumed reserve" in text


def test_the_ab_pools_are_still_reproduced() -> None:
    for profile, observed in (("agent", 2_669_829), ("batch", 1_598_763)):
        memory = plan(DS4, profile=profile)
        (row,) = [c for c in memory["comparisons"] if c["observed_tokens"] == observed]
        assert row["predicted_tokens"] == pytest.approx(observed, rel=1e-4)


def test_what_the_model_does_not_reproduce_is_printed() -> None:
    text = "\n".join(plan(DS4)["unreproduced"])
    # the 1.59x of the batch boot does not follow from its own pool
    assert "1,598,763 / 1,048,576 = 1.52x" in text
    # "insufficient for even 32K" is the report's judgement, said as assumed
    assert "GMU 0.70 left 2.39 GiB of KV: observed refuses" in text
    assert "that outcome is the source's words, assumed" in text


def test_solve_stays_at_the_ceiling_and_prints_the_start_up_check() -> None:
    for agents in (4, 8):
        done = invoke_cli("memory", "plan", DS4, "--profile", "agent", "--solve",
                          f"agents={agents},context=128k")
        out = " ".join(done.stdout.split())
        assert "gpu-memory-utilization 0.78" in out and "vLLM's start-up check: boots" in out
        assert "0.70 is the least" not in out and "0.72 is the least" not in out
    refused = invoke_cli("memory", "plan", LAGUNA, "--solve", "agents=1,context=128k",
                         check=False)
    assert refused.returncode == 1 and "vLLM's start-up check: refuses" in refused.stdout


def test_glm_52_plan_names_its_assumed_numbers_and_the_fields_serve() -> None:
    memory = plan("glm-5.2")
    (finding,) = [f for f in memory["findings"] if f["field"] == "KV budget"]
    assert finding["severity"] == "warning"
    assert "assumed numbers" in finding["message"] and "field: GLM-5.2 served" in finding["message"]
    assert "assumed from the DS4 stack" in finding["message"]
    assert "raise gpu-memory-utilization" not in finding["fix"]  # it is at the ceiling
    _, checks = doctor("glm-5.2")
    assert checks["gmu"]["status"] == "warning" and "assumed from" in checks["gmu"]["summary"]


def test_glm_52_weights_cannot_stay_cached_and_a_warm_read_does_not_help() -> None:
    """The field: 406 GB on 121 GB nodes, 0.0% in the page cache. The rule: a warm-read helps
    only when the weights fit in MemAvailable before the engine starts."""
    check = doctor("glm-5.2")[1]["weights-vs-ram"]
    assert check["status"] == "warning"
    assert "reads 378.1 GiB" in check["summary"] and "93.3 GiB" in check["summary"]
    (finding,) = check["findings"]
    assert "cannot stay in the page cache" in finding["message"]
    assert "warm-read before start does not help" in finding["message"]


def test_laguna_warm_read_helps_the_load() -> None:
    """The field, Laguna (67 GB): 8.75 s a shard warm against 11.5 s cold."""
    check = doctor(LAGUNA)[1]["weights-vs-ram"]
    assert check["status"] == "info"
    assert "warm-read before start (hook warm-read) helps the load" in check["summary"]
    assert "do not survive while serving" in check["summary"]


def test_glm_52_load_tax_is_the_whole_checkpoint_per_node_at_the_measured_rate() -> None:
    """The field: ~406 GB per node per serve at ~1.1 GB/s, ~370 s; not size / node count."""
    (finding,) = doctor("glm-5.2")[1]["weights-route"]["findings"]
    message = finding["message"]
    assert "about 369 s" in message and "406.0 GB" in message
    assert "1.10 GB/s (measured in the field" in message
    assert "instanttensor is configured but no boot of this recipe proves it" in message
    assert "the report does not say which loader they ran" in message


def test_a_stack_is_served_by_model_nodes_tp_and_engine_release() -> None:
    assert DS4_STACK.serves("deepseek-v4-flash", 2, 2, "0.21.1rc1.dev339 + DSpark overlay")
    assert not DS4_STACK.serves("deepseek-v4-flash", 2, 2, "source build + DSpark overlay")
    assert not DS4_STACK.serves("deepseek-v4-flash", 1, 1, "0.21.1")
    assert not LAGUNA_STACK.serves("deepseek-v4-flash", 1, 1, "0.25.1")
    assert LAGUNA_STACK.serves("laguna-s-2.1", 1, 1, "0.25.3")
