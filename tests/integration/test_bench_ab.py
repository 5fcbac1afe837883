"""`sm121 bench ab` serves two profiles of tiny-cpu through sm121's launcher (two short boots),
runs a short overlap on each, stops them, and writes one comparison."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest
import yaml
from support import run_cli
from support.timeouts import BOOT_S, serves

pytestmark = pytest.mark.integration


def _tiny_cpu_waiting_the_suites_boot_timeout(home: Path) -> str:
    """tiny-cpu as a user recipe whose readiness waits support/timeouts.py's BOOT_S, not the
    recipe's 600 s (boots under the suite's load took up to 784 s; `bench ab` has no
    --timeout of its own). Its profiles and engine args are tiny-cpu's."""
    recipe = yaml.safe_load(resources.files("sm121.recipes.builtin")
                            .joinpath("tiny-cpu.yaml").read_text())
    recipe["name"] = "tiny-cpu-ab"
    recipe["readiness"]["timeout_s"] = BOOT_S
    (home / "recipes").mkdir(exist_ok=True)
    (home / "recipes" / "tiny-cpu-ab.yaml").write_text(yaml.safe_dump(recipe))
    return "tiny-cpu-ab"


def test_ab_serves_each_profile_runs_the_scenario_and_compares(tmp_path, sm121_home):
    """Its own two boots: serving each profile itself is what `bench ab` does."""
    out = tmp_path / "ab.json"
    recipe = _tiny_cpu_waiting_the_suites_boot_timeout(sm121_home)
    result = run_cli("bench", "ab", recipe, "--profiles", "agent,lpt-512", "--reps", "1",
                     "-L", "4096", "--param", "before_s=1", "--short-at", "0.3",
                     "--out", str(out), timeout=serves(2, work_s=300))
    data = json.loads(out.read_text())
    assert data["kind"] == "ab" and data["status"] == "complete"
    assert [s["profile"] for s in data["samples"]] == ["agent", "lpt-512"]
    assert [s.get("error") for s in data["samples"]] == [None, None]
    served = {s["profile"]: s["engine_args"] for s in data["samples"]}
    assert served["lpt-512"]["long-prefill-token-threshold"] == 512
    assert "long-prefill-token-threshold" not in served["agent"]
    for sample in data["samples"]:
        assert sample["samples"][-1]["long"]["prompt_tokens"] == 4096
        assert sample["boot"]["kv_pool_tokens"] > 0
    row = data["summary"]["metrics"]["prefill_tok_s"]
    assert set(row["profiles"]) == {"agent", "lpt-512"}
    # on a loaded host a repetition may be invalid (then its median is None, not a guess)
    if row["profiles"]["agent"]["median"]:
        assert row["ratio_to_baseline"]["agent"] == pytest.approx(1.0)
    assert "admission ratio" in result.stdout
    # Both engines were stopped: nothing of the A/B is left running.
    status = json.loads(run_cli("status", "--json").stdout)
    ab_runs = [r for r in status if r["run_id"] in {s["run_id"] for s in data["samples"]}]
    assert ab_runs and all(r["status"] == "stopped" for r in ab_runs)
