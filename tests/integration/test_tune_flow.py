"""A tiny `sm121 tune tiny-cpu` that reuses the committed CPU-testbed knee (a knee prices
nothing; test_tune.py measures one) and boots two arms (the baseline and the reference): two
repetitions on each boot, one exclusive long prefill and one capacity probe, a plan made
before every boot from the times measured, then one more boot of each, interleaved (the
budget left, `--boots 2`), the pick, the report and the `tuned` profile written into the
user's copy of the recipe (removed again, so later tests see the built-in). It asserts the search's shape, not its
numbers. Tiny sizes keep it to a few minutes on the loaded testbed.

It boots only engines of its own, so `make test` runs it in the unit session
(`beside_unit`, scripts/test-tiers.sh)."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest
from support import invoke_cli

from sm121.bench.tune.candidates import Candidate, merged_args
from sm121.recipes.loader import load_recipe

pytestmark = [pytest.mark.integration, pytest.mark.beside_unit]

KNEE = Path(__file__).resolve().parents[2] / "docs" / "results" / "cpu-testbed" / "tune" / "knee.json"

WORKLOAD = """preset: coding-agent-with-batch
system_prompt_tokens: 400
task_tokens: 40
tools: {count: 2, tokens_each: 40}
append_tokens: [40, 80]
output_tokens: [8, 12]
think_time_s: [0.1, 0.2]
background: {prompt_tokens: 6000, output_tokens: 4}
"""


def test_a_tiny_tune_boots_a_candidate_picks_reports_and_writes_the_tuned_profile(
        tmp_path: Path, sm121_home: Path):
    workload = tmp_path / "small.yaml"
    workload.write_text(WORKLOAD)
    out = tmp_path / "tune"
    user_copy = sm121_home / "recipes" / "tiny-cpu.yaml"
    builtin = resources.files("sm121.recipes").joinpath("builtin/tiny-cpu.yaml").read_text()
    args = ["tune", "tiny-cpu", "--knee", str(KNEE), "--workload", str(workload),
            "--slo", "ttft_p95=10s", "--agents", "1", "--max-agents", "2", "--turns", "2",
            "--baselines", "", "--max-candidates", "2", "--reps", "2", "--sweep-points", "1",
            "--rest", "0", "--budget", "15m", "--rep-estimate", "60", "--boots", "2",
            "--out", str(out)]
    try:
        result = invoke_cli(*args)
        state = json.loads((out / "tune.json").read_text())
        assert state["status"] == "complete"
        # the committed knee counted no first prompt: the cold start is not known, and why
        assert state["cold_rate"]["why"].startswith("no first prompt counted: the knee's file "
                                                    "holds no count")
        arms = [Candidate.from_json(c) for c in state["candidates"]]
        assert arms[0].name == "agent" and arms[0].role == ("baseline",)
        assert arms[1].name == "chunk-8192" and arms[1].role == ("reference",)
        recipe = load_recipe("tiny-cpu").recipe
        for arm in arms:  # one knob per step-1 arm; every arm holds the largest N + 1
            if arm.source == "step 1":
                assert len(arm.differs) == 1, arm
            seqs = merged_args(recipe, arm).get("max-num-seqs")
            assert seqs is None if arm.name == "vllm-defaults" else int(str(seqs)) >= 3
        assert {a.name for a in arms} >= {"seqs-12", "lpt-512", "chunk-4096", "vllm-defaults"}
        # A plan before every boot; the second from the times the first boot measured.
        plans = state["plans"]
        assert [p["before"] for p in plans] == ["agent", "chunk-8192"]
        assert plans[0]["rep_s"] == 60 and plans[1]["rep_s"] != 60
        assert plans[1]["arms_left"] == 1
        ab = json.loads((out / "ab-agents.json").read_text())
        # Each arm's boot, then the budget left: the finalists booted again, interleaved.
        # The leader before the confirmation first, then the other; the confirmation boots
        # may change the lead (a fresh-clone run chose the second finalist), so the choice
        # is one of the two, not necessarily the first.
        pair = state["confirm_plan"]["finalists"]
        assert sorted(pair) == ["agent", "chunk-8192"] and state["result"]["chosen"] in pair
        assert [b["name"] for b in ab["boots"]] == ["agent", "chunk-8192", *pair]
        for name in ("agent", "chunk-8192"):
            samples = [s for s in ab["samples"] if s["profile"] == name and not s.get("error")]
            assert [s["rep_on_boot"] for s in samples] == [0, 1, 0]
            assert len({s["run_id"] for s in samples[:2]}) == 1  # reps and probe on one boot
            assert samples[2]["run_id"] != samples[0]["run_id"]
            other = state["confirm_plan"]["second_n"]  # None: no N below the target held
            again = (state.get("confirm") or {}).get(name, [])
            assert [(p["agents"], p["run_id"]) for p in again] == (
                [(other, samples[2]["run_id"])] if other else [])
        rows = {r["name"]: r for r in state["result"]["table"]}
        for row in rows.values():
            tested = [n for n, _ in row["capacity"]["tested"]]
            assert tested == [1, 2]  # the target, then the bisection's top (max-agents)
            assert row["probes"][0]["run_id"] == row["boots"][0]
            assert "N*" in row["capacity"]["text"] and row["goodput_ci"]
            assert row["prefill_reference"] == "chunk-8192" and row["prefill_cost"] is not None
            assert row["judged_turns"] > 0
        assert rows["chunk-8192"]["prefill_cost"] == 0
        # One exclusive long prefill per boot (its arm boot and its confirmation boot), the
        # background job's prompt alone on the idle engine: as long as the job in the runs.
        for name, row in rows.items():
            alone = state["exclusive"][name]
            assert [e["run_id"] for e in alone] == list(dict.fromkeys(
                s["run_id"] for s in ab["samples"] if s["profile"] == name))
            job = row["background_prompt_tokens"]
            for e in alone:
                assert e["error"] is None and e["ttft_s"] > 0
                assert abs(e["prompt_tokens"] - job) <= 0.01 * job, (e, job)
            assert row["exclusive_ttft_s"] > 0 and row["exclusive_cost"] is not None
        assert rows["chunk-8192"]["exclusive_cost"] == 0
        report = (out / "report.md").read_text()
        assert "## The knee" in report and (out / "tune-knee.png").stat().st_size > 0
        assert "## Arms" in report and "## Plans" in report and "no difference shown" in report
        assert "3 each needed" in report  # two boots per finalist: no claim
        assert (out / "tune-candidates.png").stat().st_size > 0
        text = user_copy.read_text()
        assert "# sm121 tune: begin" in text and "prefill knee" not in text
        assert "against reference arm chunk-8192" in text and "N*" in text
        assert "alone on the engine" in text and "(2 boots)" in report
        assert f"report {out / 'report.md'}" in text
        assert "written into" in result.stdout and "capacity" in result.stdout
        assert resources.files("sm121.recipes").joinpath(
            "builtin/tiny-cpu.yaml").read_text() == builtin
        # Resuming a complete tune measures nothing more.
        again = invoke_cli(*args, "--no-write")
        assert "goodput" in again.stdout
        assert json.loads((out / "tune.json").read_text())["resumed"] == 1
        assert len(json.loads((out / "ab-agents.json").read_text())["boots"]) == 4
    finally:
        user_copy.unlink(missing_ok=True)
