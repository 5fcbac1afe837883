"""Pieces of the cluster watchdog that need no engine: the cause it records names the dead
node whose log tells why, and a rollover stops the engine nodes but leaves what runs beside
them (a gateway in front) alone. Real processes in their own groups stand in for the nodes."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from sm121.engines.vllm.adapter import VllmAdapter
from sm121.hosts import processes
from sm121.launch.cluster_watchdog import _cause
from sm121.launch.control import stop_nodes
from sm121.runs.state import NodeProcess, RunInfo

VLLM = VllmAdapter()


def _node(tmp_path: Path, name: str, log: str) -> NodeProcess:
    path = tmp_path / f"{name}.log"
    path.write_text(log)
    return NodeProcess(name=name, log=str(path), pid_file=str(tmp_path / f"{name}.pid"))


def test_the_cause_names_the_node_whose_log_has_the_error(tmp_path: Path) -> None:
    quiet = _node(tmp_path, "node-a", "INFO serving\nINFO still serving\n")
    telling = _node(tmp_path, "node-b", "INFO serving\nRuntimeError: NCCL error: peer gone\n")
    cause, tail = _cause([quiet, telling], VLLM)
    assert cause == "node-b: RuntimeError: NCCL error: peer gone"
    assert tail[-1] == "RuntimeError: NCCL error: peer gone"


def test_a_kill_without_a_log_line_is_named_as_such(tmp_path: Path) -> None:
    cause, _ = _cause([_node(tmp_path, "node-b", "INFO serving\n")], VLLM)
    assert cause.startswith("node-b: no error in its log")


def _sleeper(tmp_path: Path, name: str) -> NodeProcess:
    process = processes.spawn([sys.executable, "-c", "import time; time.sleep(120)"],
                              os.environ, tmp_path / f"{name}.log")
    started = processes.identity(process.pid)
    return NodeProcess(name=name, pid=process.pid, pgid=process.pid, log=str(tmp_path / "x"),
                       pid_file=str(tmp_path / "p"), boot_id=started.boot_id,
                       start_time=started.start_time)


def test_a_rollover_stops_the_engine_nodes_only(tmp_path: Path) -> None:
    nodes = [_sleeper(tmp_path, n) for n in ("node-a", "node-b", "gateway")]
    run = RunInfo(run_id="r", recipe="x", profile=None, created="now",
                  base_url="http://127.0.0.1:1", model="m", nodes=nodes)
    try:
        assert stop_nodes(run, {"node-a", "node-b"}) == []
        alive = {n.name: processes.group_alive(n.pgid or 0) for n in nodes}
        assert alive == {"node-a": False, "node-b": False, "gateway": True}
    finally:
        stop_nodes(run)
    assert not processes.group_alive(nodes[2].pgid or 0)
