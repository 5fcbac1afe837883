"""`sm121 doctor --cluster` over a real sshd on loopback: two nodes probed over SSH, each
with its own findings, and the exit status set by errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from support import run_cli
from support.sshd import Sshd

pytestmark = [pytest.mark.integration, pytest.mark.own_engines]


def cluster_file(tmp_path: Path, sshd: Sshd, worker_hca: str) -> Path:
    nodes = [{"name": f"spark{i + 1}", "ssh": host, "fabric_if": "lo",
              "fabric_ip": f"10.0.0.{i + 1}", "hcas": [hca]}
             for i, (host, hca) in enumerate(zip(sshd.hosts[:2], ["", worker_hca], strict=True))]
    nodes[0]["hcas"] = []  # the head: no RDMA device named, nothing to check
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump({"name": "loopback", "head": "spark1", "nodes": nodes,
                                    "ssh_config": str(sshd.ssh_config)}))
    return path


def test_doctor_probes_every_node_over_ssh(sshd: Sshd, tmp_path: Path) -> None:
    cluster = cluster_file(tmp_path, sshd, worker_hca="rocep1s0f0")
    # --trust: the loopback sshd's ssh_config names its own key and known-hosts files
    done = run_cli("doctor", "--cluster", str(cluster), "--json", "--trust", check=False,
                   timeout=300)
    report = json.loads(done.stdout)
    assert [n["node"] for n in report["nodes"]] == ["spark1", "spark2"]
    for node in report["nodes"]:
        assert node["error"] is None, node["error"]
        memory = next(c for c in node["checks"] if c["check"] == "memory")
        assert "total" in memory["summary"]
    # this machine has no RDMA device: the worker's named HCA does not exist there
    worker = {c["check"]: c for c in report["nodes"][1]["checks"]}
    assert worker["fabric"]["status"] == "error"
    assert "rocep1s0f0" in worker["fabric"]["findings"][0]["message"]
    assert done.returncode == 1 and report["has_errors"]
