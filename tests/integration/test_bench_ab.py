"""`sm121 bench ab` serves two profiles of tiny-cpu through sm121's launcher (two short boots),
runs one short overlap repetition on each, stops them, and writes one comparison. Reps per
boot (a later repetition on a boot against its first) are test_tune's A/B: one boot, two
repetitions, through the same A/B code."""

from __future__ import annotations

import json

import pytest
from support import run_cli
from support.timeouts import serves

from sm121.bench.scenarios import parse_results

pytestmark = [pytest.mark.integration, pytest.mark.own_engines]


def test_ab_serves_each_profile_runs_the_scenario_and_compares(tmp_path):
    """Its own two boots: serving each profile itself is what `bench ab` does. The built-in
    recipe, whose readiness waits 600 s: the eager tiny engine's boots in a whole-suite run took
    24-78 s (the session's boot summary), and a copy as a user recipe would pay the foreign
    recipe's argv check (one vLLM import, about 14 s) on top."""
    out = tmp_path / "ab.json"
    result = run_cli("bench", "ab", "tiny-cpu", "--profiles", "agent,lpt-512", "--reps", "1",
                     "--rest", "0", "-L", "4096", "--param", "before_s=1", "--short-at", "0.3",
                     "--out", str(out), timeout=serves(2, work_s=300))
    data = json.loads(out.read_text())
    assert data["kind"] == "ab" and data["status"] == "complete"
    assert parse_results(data).to_json() == data  # the A/B's models read what it wrote
    assert [s["profile"] for s in data["samples"]] == ["agent", "lpt-512"]
    assert [s.get("error") for s in data["samples"]] == [None] * 2
    assert len({s["run_id"] for s in data["samples"]}) == 2 == len(data["boots"])
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
