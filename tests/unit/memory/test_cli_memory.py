"""The command lines: `sm121 plan ... --memory`, `sm121 memory plan`, `sm121 doctor`."""

from __future__ import annotations

import json
from pathlib import Path

from support import invoke_cli

HOSTS = Path(__file__).resolve().parents[2] / "fixtures" / "hosts"
DS4 = "deepseek-v4-flash-eugr-agent"


def test_plan_memory_flags_gmu_070_without_a_cluster() -> None:
    done = invoke_cli("plan", DS4, "--profile", "agent", "--memory", "--set",
                   "gpu-memory-utilization=0.70", check=False)
    out = " ".join(done.stdout.split())  # rich wraps long lines
    assert "no --cluster" in out and "assumes GB10 nodes" in out
    assert "0.70 is below the ceiling 0.78" in out and "KV lever, not a safety lever" in out
    assert "at the recipe's ceiling 0.78 (measured on DS4 stack" in out
    assert "the KV would be 11.96 GiB" in out
    # DS4's need is not measured: the assumed one says 1M would not fit 2.39 GiB; a warning
    assert "would need 4.70 GiB" in out and done.returncode == 0


def test_plan_memory_json_carries_the_plan_and_the_memory() -> None:
    done = invoke_cli("plan", "tiny-cpu", "--profile", "agent", "--memory", "--json")
    data = json.loads(done.stdout)
    assert data["plan"]["recipe"] == "tiny-cpu"
    assert data["memory"]["pool_tokens"] == 4_194_304


def test_memory_solve_says_when_it_cannot_be_done() -> None:
    ok = json.loads(invoke_cli("memory", "plan", DS4, "--solve", "agents=4,context=128k",
                            "--json").stdout)
    assert ok["feasible"] and ok["max_model_len"] == 131072
    no = invoke_cli("memory", "plan", DS4, "--solve", "agents=8,context=1m", check=False)
    assert no.returncode == 1 and "cannot be done" in no.stdout


def test_doctor_on_this_machine_gives_json() -> None:
    done = invoke_cli("doctor", "--json", check=False)
    report = json.loads(done.stdout)
    checks = {c["check"] for c in report["nodes"][0]["checks"]}
    assert {"memory", "hf-cache", "jit-cache", "nccl"} <= checks
    assert done.returncode == (1 if report["has_errors"] else 0)


def test_doctor_reports_will_refuse_on_the_page_cache_fixture() -> None:
    done = invoke_cli("doctor", "--root", str(HOSTS / "gb10-head"), "--recipe", "laguna-s-2.1",
                   "--set", "max-model-len=262144", "--json", check=False)
    report = json.loads(done.stdout)
    gate = next(c for c in report["nodes"][0]["checks"] if c["check"] == "uma-gate")
    assert gate["status"] == "error" and "will refuse" in gate["summary"]
    assert "unverified in the field" in gate["findings"][-1]["fix"]
    assert done.returncode == 1
