"""`sm121 bench knee` on the session's tiny engine (its step budget is the agent profile's
2048), then a tiny `sm121 tune tiny-cpu` that reuses that knee and boots one candidate: two
repetitions on the boot, one sweep point, the pick, the report and the `tuned` profile written
into the user's copy of the recipe (removed again, so later tests see the built-in). Tiny
sizes keep it to about two minutes on the loaded testbed."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest
from support import TinyEngine, invoke_cli

pytestmark = pytest.mark.integration

WORKLOAD = """preset: coding-agent-with-batch
system_prompt_tokens: 400
task_tokens: 40
tools: {count: 2, tokens_each: 40}
append_tokens: [40, 80]
output_tokens: [8, 12]
think_time_s: [0.1, 0.2]
background: {prompt_tokens: 6000, output_tokens: 4}
"""


@pytest.fixture(scope="module")
def knee(tiny_engine: TinyEngine, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("knee") / "knee.json"
    invoke_cli("bench", "knee", "--url", tiny_engine.base_url, "--chunk", "2048",
               "--steps", "128,512,2048,4096", "--batches", "1,2", "--reps", "2",
               "--decode-tokens", "16", "--out", str(out))
    return out


def test_knee_measures_both_windows_per_step_and_drops_steps_above_the_budget(knee: Path):
    data = json.loads(knee.read_text())
    assert data["status"] == "complete" and data["summary"]["dropped_steps"] == [4096]
    prefill = [s for s in data["samples"] if s["kind"] == "prefill"]
    assert {s["step"] for s in prefill} == {128, 512, 2048}
    assert len(prefill) == 3 * 3  # a warm-up and two measured repetitions per step
    for sample in prefill:
        assert sample["prompt_tokens"] == sample["step"]  # one exact prompt per step
        assert sample["cached_tokens"] == 0  # salted: nothing from the prefix cache
        assert sample["engine_s"] and sample["engine_s"] <= sample["client_s"]
    engine = data["summary"]["engine"]
    assert engine["knee"]["knee_at"] in {128, 512, 2048}
    assert [r["n"] for r in engine["prefill"]] == [2, 2, 2]
    assert all(r["median"] for r in engine["decode"])


def test_a_tiny_tune_boots_a_candidate_picks_reports_and_writes_the_tuned_profile(
        knee: Path, tmp_path: Path, sm121_home: Path):
    workload = tmp_path / "small.yaml"
    workload.write_text(WORKLOAD)
    out = tmp_path / "tune"
    user_copy = sm121_home / "recipes" / "tiny-cpu.yaml"
    builtin = resources.files("sm121.recipes").joinpath("builtin/tiny-cpu.yaml").read_text()
    try:
        result = invoke_cli("tune", "tiny-cpu", "--knee", str(knee), "--workload", str(workload),
                            "--slo", "ttft_p95=10s", "--agents", "1", "--turns", "2",
                            "--baselines", "", "--max-candidates", "1", "--reps", "2",
                            "--sweep-points", "1", "--rest", "0", "--budget", "10m",
                            "--out", str(out))
        state = json.loads((out / "tune.json").read_text())
        assert state["status"] == "complete"
        first = state["candidates"][0]["name"]
        assert first.startswith("t-lpt-") and state["result"]["chosen"] == first
        ab = json.loads((out / "ab-agents.json").read_text())
        samples = [s for s in ab["samples"] if not s.get("error")]
        assert [(s["rep"], s["rep_on_boot"]) for s in samples] == [(0, 0), (1, 1)]
        assert len({s["run_id"] for s in samples}) == 1 and len(ab["boots"]) == 1
        # Reps per boot: the later repetition is tested against the first on its boot.
        assert ab["summary"]["boot_effect"]
        assert state["sweeps"][first][0]["agents"] == 2  # met at 1 agent: tried 2
        report = (out / "report.md").read_text()
        assert "## The knee" in report and (out / "tune-knee.png").stat().st_size > 0
        assert (out / "tune-candidates.png").stat().st_size > 0
        text = user_copy.read_text()
        assert "# sm121 tune: begin" in text and "prefill knee" in text
        assert f"report {out / 'report.md'}" in text
        assert "written into" in result.stdout
        assert resources.files("sm121.recipes").joinpath(
            "builtin/tiny-cpu.yaml").read_text() == builtin
        # Resuming a complete tune measures nothing more.
        again = invoke_cli("tune", "tiny-cpu", "--knee", str(knee), "--workload", str(workload),
                           "--slo", "ttft_p95=10s", "--agents", "1", "--turns", "2",
                           "--baselines", "", "--max-candidates", "1", "--reps", "2",
                           "--sweep-points", "1", "--rest", "0", "--budget", "10m",
                           "--out", str(out), "--no-write")
        assert "goodput" in again.stdout
        assert json.loads((out / "tune.json").read_text())["resumed"] == 1
        assert len(json.loads((out / "ab-agents.json").read_text())["boots"]) == 1
    finally:
        user_copy.unlink(missing_ok=True)
