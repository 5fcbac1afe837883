"""serve(plan, mode)'s mode: where a plan runs (here, or on a cluster file's nodes over SSH)
and whether a watchdog holds it, chosen the same way for `sm121 serve`, `bench ab` and
`tune`; and a bad --cluster file stops `bench ab` and `tune` before anything is served."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support import invoke_cli

from sm121.plan.build import build_plan
from sm121.recipes.schema import RestartPolicy
from sm121.serving.serve import MODES, mode_for, supervise


def test_the_mode_follows_the_cluster_file_and_the_restart_policy() -> None:
    plan = build_plan("tiny-cpu", "agent")
    assert plan.restart is None
    assert mode_for(plan, cluster=False) == "local"
    assert mode_for(plan, cluster=True) == "cluster"
    watched = supervise(plan)
    assert watched.restart == RestartPolicy()
    assert mode_for(watched, cluster=False) == "supervised"
    assert mode_for(watched, cluster=True) == "cluster-supervised"
    never = plan.model_copy(update={"restart": RestartPolicy(policy="never")})
    assert mode_for(never, cluster=False) == "local"
    assert set(MODES) == {"local", "cluster", "supervised", "cluster-supervised"}


def test_supervise_keeps_the_recipe_s_own_policy() -> None:
    plan = build_plan("tiny-cpu", "agent")
    own = plan.model_copy(update={"restart": RestartPolicy(max=1, within_s=900)})
    assert supervise(own).restart == own.restart


@pytest.mark.parametrize("command", [
    ["bench", "ab", "tiny-cpu", "--profiles", "agent", "--reps", "1", "--out", "OUT/ab.json"],
    ["tune", "tiny-cpu", "--knee", "KNEE", "--budget", "1m", "--no-write", "--out", "OUT"],
])
def test_a_bad_cluster_file_is_refused_before_anything_is_served(
        command: list[str], tmp_path: Path, sm121_home: Path) -> None:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(json.dumps({"name": "c", "head": "a", "nodes": [
        {"name": "a", "ssh": "host; touch pwned"}]}))
    knee = tmp_path / "knee.json"
    knee.write_text("{}")
    out = tmp_path / "out"
    argv = [a.replace("KNEE", str(knee)).replace("OUT", str(out)) for a in command]
    runs = sm121_home / "runs"
    before = set(runs.iterdir()) if runs.is_dir() else set()
    result = invoke_cli(*argv, "--cluster", str(cluster), check=False)
    assert result.returncode == 2, result.stderr
    assert str(cluster) in result.stderr and "nodes.0.ssh" in result.stderr
    assert not out.exists()  # no results, no tune state
    assert (set(runs.iterdir()) if runs.is_dir() else set()) == before  # no run was started
