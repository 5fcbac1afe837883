"""The cluster launcher's failure paths over a real sshd, with a stand-in engine: a sleeping
python process named as such in its recipe, not vLLM (the real two-node vLLM serve is in
test_cluster_serve.py). Rollback, hooks that run and skip, --trust, and `cluster check`."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from support import free_port, run_cli
from support.sshd import Sshd

from sm121.hosts.processes import group_alive

pytestmark = [pytest.mark.integration, pytest.mark.own_engines]

STAND_IN = """\
name: stand-in-2node
description: "stand-in engine: a sleeping python process, not vLLM; tests the launcher only"
model: {{id: stand-in, source: path, path: {weights}}}
engine: {{kind: vllm}}
runtime: {{kind: native, command: [python, -c, "import time; time.sleep(600)"]}}
parallelism: {{tp: 2, nodes: 2}}
hooks:
  before_serve: {before}
  custom:
    mark: touch "$SM121_RUN_DIR/marked"
    refuse: echo "the disk is full" >&2; exit 3
readiness: {{timeout_s: 60}}
"""


def _files(sshd: Sshd, folder: Path, before: str, worker_python: str = sys.executable
           ) -> tuple[Path, Path, Path]:
    weights = folder / "weights"
    weights.mkdir(exist_ok=True)
    # Sparse: 1 TB that takes no disk, larger than any test machine's memory.
    subprocess.run(["truncate", "-s", "1T", str(weights / "model.safetensors")], check=True)
    recipe = folder / "stand-in.yaml"
    recipe.write_text(STAND_IN.format(weights=weights, before=before))
    nodes = [{"name": "node-a", "fabric_if": "lo", "fabric_ip": "127.0.0.1", "hcas": ["a0"],
              "python": sys.executable},
             {"name": "node-b", "fabric_if": "lo", "fabric_ip": "127.0.0.1", "hcas": ["b0"],
              "python": worker_python}]
    state = folder / "nodes"
    return recipe, sshd.cluster_file(folder / "cluster.yaml", nodes, state,
                                     master_port=free_port()), state


def _last_run(recipe: str) -> dict:
    return [r for r in json.loads(run_cli("status", "--json").stdout) if r["recipe"] == recipe][-1]


def test_a_worker_that_fails_rolls_back_the_head(sshd: Sshd, tmp_path: Path) -> None:
    recipe, cluster, state = _files(sshd, tmp_path, "[drop-caches, warm-read]",
                                    worker_python="/nonexistent/python")
    result = run_cli("serve", str(recipe), "--cluster", str(cluster), "--port", str(free_port()),
                     "--trust", check=False, timeout=300)
    output = " ".join((result.stdout + result.stderr).split())
    assert result.returncode == 2, output
    assert "node node-b (worker, rank 1) exited" in output
    assert "/nonexistent/python" in output and "No such file or directory" in output
    assert "every node was stopped" in output
    # The hooks ran before the start, and warm-read said why it skipped.
    assert "before_serve drop-caches on node-a: ok" in output
    assert "before_serve warm-read on node-b: skipped" in output
    assert "is not smaller than this node's available memory" in output
    run = _last_run("stand-in-2node")
    assert run["status"] == "failed" and "node-b" in run["failure"]
    head = next(n for n in run["nodes"] if n["name"] == "node-a")
    assert head["pgid"] and not group_alive(head["pgid"])
    assert (state / "runs" / run["run_id"] / "node-a" / "engine.pid").is_file()


def test_custom_hooks_need_trust(sshd: Sshd, tmp_path: Path) -> None:
    recipe, cluster, state = _files(sshd, tmp_path, "[mark]")
    result = run_cli("serve", str(recipe), "--cluster", str(cluster), "--port", str(free_port()),
                     check=False, timeout=120)
    output = " ".join(result.stderr.split())
    assert result.returncode == 2
    assert "custom hook command" in output and "--trust" in output
    assert "runtime.command: runs `python -c" in output  # the stand-in's own command, too
    assert 'touch "$SM121_RUN_DIR/marked"' in output
    assert not (state / "runs").exists()  # refused before any node was touched


def test_a_failing_hook_with_trust_starts_nothing(sshd: Sshd, tmp_path: Path) -> None:
    recipe, cluster, state = _files(sshd, tmp_path, "[mark, refuse]")
    result = run_cli("serve", str(recipe), "--cluster", str(cluster), "--port", str(free_port()),
                     "--trust", check=False, timeout=120)
    output = " ".join(result.stderr.split())
    assert result.returncode == 2
    assert "a before_serve hook failed, nothing was started" in output
    assert "refuse on node-a: failed" in output and "the disk is full" in output
    run_dirs = list((state / "runs").glob("*/node-*"))
    assert {d.name for d in run_dirs} == {"node-a", "node-b"}
    for folder in run_dirs:
        assert (folder / "marked").is_file()  # the trusted hook ran before the failing one
        assert not (folder / "engine.pid").exists()


def test_cluster_check_reports_per_node(sshd: Sshd, tmp_path: Path) -> None:
    _, cluster, _ = _files(sshd, tmp_path, "[]")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = run_cli("cluster", "check", str(cluster), "--port", str(port), "--json",
                         "--trust", check=False, timeout=120)
    checks = json.loads(result.stdout)
    assert result.returncode == 2  # the HCAs do not exist here
    by = {(c["node"].split()[0], c["check"], c["detail"].split()[0]): c["status"] for c in checks}
    assert by[("node-a", "ssh", "reachable")] == "ok"
    assert by[("node-b", "python", sys.executable)] == "ok"
    assert by[("node-b", "hcas", "b0")] == "error"
    assert by[("node-a", "ports", "port")] == "error"
    assert not [c for c in checks if c["check"] == "clock"]  # same machine: no skew


def test_local_serves_run_hooks_too(tmp_path: Path) -> None:
    recipe = tmp_path / "stand-in-local.yaml"
    recipe.write_text(STAND_IN.format(weights=tmp_path, before="[mark, refuse]")
                      .replace("name: stand-in-2node", "name: stand-in-local")
                      .replace("tp: 2, nodes: 2", "tp: 1, nodes: 1"))
    refused = run_cli("serve", str(recipe), "--port", str(free_port()), check=False, timeout=120)
    assert refused.returncode == 2 and "--trust" in refused.stderr
    result = run_cli("serve", str(recipe), "--port", str(free_port()), "--trust", check=False,
                     timeout=120)
    output = " ".join(result.stderr.split())
    assert result.returncode == 2 and "a before_serve hook failed, nothing was started" in output
    run = _last_run("stand-in-local")
    assert run["status"] == "failed" and run["nodes"][0]["pid"] is None
    assert (Path(run["nodes"][0]["log"]).parent / "marked").is_file()
