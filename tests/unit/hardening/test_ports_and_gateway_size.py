"""`cluster check` checks the cluster's own master_port, and `serve --gateway` sizes the
gateway by the engine as served (with --set), not by the recipe alone."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from sm121.cli import serve_ready
from sm121.cluster.spec import Cluster, Node
from sm121.doctor.cluster_check import CheckRequest, check_cluster
from sm121.gateway import registry
from sm121.gateway.entry import read_config
from sm121.plan.build import build_plan
from sm121.runs.state import RunInfo, create_run_dir
from sm121.serving import gateway_process as gateway


def test_cluster_check_finds_the_master_port_of_the_file_in_use() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        cluster = Cluster(name="c", head="here", nodes=(Node(name="here"),), master_port=port)
        checks = check_cluster(CheckRequest(cluster=cluster, source="c.yaml", ports=(1,)))
    assert [c.detail for c in checks if c.check == "ports"] == [f"port {port} is already in use"]


class _Spawned(Exception):
    pass


def test_serve_gateway_takes_max_num_seqs_as_served(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[list[str]] = []

    def spawn(argv: list[str], env: object, log: Path) -> None:
        seen.append(list(argv))
        raise _Spawned

    monkeypatch.setattr(gateway.processes, "spawn", spawn)
    plan = build_plan("tiny-cpu", "agent", None, {"max-num-seqs": 3})
    run = RunInfo(run_id="gw-size", recipe="tiny-cpu", profile="agent", created="x",
                  base_url="http://127.0.0.1:1", model="tiny")
    run_dir = create_run_dir(run.run_id)
    with pytest.raises(_Spawned):
        serve_ready.start_gateway_for(run, plan, 1)
    # The gateway follows the run's upstreams file, whose entry carries the limits as served;
    # it is started from its config file (python -m sm121.gateway FILE), not the CLI's argv.
    argv = seen[0]
    assert argv[1:3] == ["-m", "sm121.gateway"]
    upstreams = read_config(Path(argv[-1])).registry
    assert upstreams is not None
    assert upstreams.parent == run_dir
    (spec,) = registry.load(upstreams)
    assert spec.max_inflight == 3 and spec.url == "http://127.0.0.1:1"
