"""The pick on the H200 sitting of 2026-12-05 (docs/results/gpu-h200/tune-capacity): all eight
arms measured, the budget spent. As run, the pick put the 5% prefill-cost bound before
capacity and chose the reference arm, which missed the SLO at 4 agents, over two arms that
held 28. `sm121 tune` with the sitting's arguments on its tune.json measures nothing more
(the budget holds no boot) and makes the pick and the report again, here: the chosen arm
holds the most agents found, and the report names the machine that measured, not this one."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

from support import run_cli

SITTING = (Path(__file__).parents[3] / "docs" / "results" / "gpu-h200" / "tune-capacity"
           / "tune-results.tar.gz")
ARGS = ("tune", "gpu-llama", "--workload", "coding-agent-with-batch", "--slo", "ttft_p95=2s",
        "--agents", "16", "--max-agents", "40", "--turns", "5", "--reps", "1", "--budget",
        "46m", "--baselines", "agent-admission", "--sweep-points", "2", "--boots", "3",
        "--no-write")


def test_the_h200_sitting_chooses_the_arm_that_holds_the_most_agents(tmp_path):
    with tarfile.open(SITTING) as tar:
        tar.extractall(tmp_path, filter="data")
    out = tmp_path / "tune"
    before = json.loads((out / "tune.json").read_text())
    assert before["result"]["chosen"] == "reference"  # as run: N* < 4
    result = run_cli(*ARGS, "--out", str(out), timeout=120,
                     env={"SM121_HOME": str(tmp_path / "home")})
    assert "confirmation stopped" in result.stderr  # nothing booted: the budget is spent
    state = json.loads((out / "tune.json").read_text())
    table = {r["name"]: r for r in state["result"]["table"]}
    chosen = state["result"]["chosen"]
    most = max(r["capacity"]["lo"] for r in table.values())
    assert table[chosen]["capacity"]["lo"] == most == 28
    assert chosen == "chunk-4096"  # ties chunk-8192 on capacity and goodput; costs less
    assert state["result"]["device"].startswith("NVIDIA H200")
    assert "written" not in state  # --no-write: the profile written on the device is stale
    # each arm's prediction from its own pool beside its measured bracket (issue 44)
    assert table["chunk-4096"]["predicted"] == 39 and table["chunk-4096"]["predicted_binding"] == "KV"
    report = (out / "report.md").read_text()
    assert "| 28 <= N* < 40 (predicted 39: KV binds) |" in report
    assert "NVIDIA H200" in report.splitlines()[2]
    assert "Chosen: **chunk-4096**. Its long prefill costs 16.1% in situ, over the 5% " \
           "bound: the best arm within it, reference, holds N* < 4" in report
    assert "The chosen arm: 28 <= N* < 40: not shown (32 lies inside the bracket" in report
    assert "so twice its N* is below 16; the chosen arm's lo is 28: twice the defaults " \
           "shown." in report
