"""`bench ab --cluster` and `tune --cluster` on the loopback cluster (a real sshd, nodes
127.0.0.2 and 127.0.0.3): each boot goes through sm121.serving as `serve --cluster` does, so
the measurement runs on the plan a cluster user serves. The A/B serves a two-node plan (the
tiny model at tensor parallel 2, a head and a headless worker); the tune serves tiny-cpu, a
one-node plan whose node is reached over SSH, which the single-machine launcher refuses.
Smallest sizes: one profile, one repetition, one candidate, no sweep; the tune reuses the
committed CPU-testbed knee instead of booting for one. Each test boots once."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from support import free_port, run_cli
from support.sshd import Sshd
from support.timeouts import BOOT_S, serves

from sm121.hosts.processes import group_alive

pytestmark = [pytest.mark.integration, pytest.mark.own_engines]

PROJECT = Path(__file__).resolve().parents[2]
KNEE = PROJECT / "docs" / "results" / "cpu-testbed" / "tune" / "knee.json"

TWO_NODES = """\
name: tiny-2node-ab
description: the tiny model split over two nodes (tensor parallel 2), for bench ab --cluster
model: {id: tiny, source: tiny, size_gb: 0.001}
engine: {kind: vllm}
runtime: {kind: native, command: [python, -m, vllm.entrypoints.openai.api_server]}
parallelism: {tp: 2, nodes: 2}
args: {max-model-len: 8192, dtype: bfloat16, enforce-eager: true, enable-prefix-caching: true,
       enable-prompt-tokens-details: true}
# ssh nodes get only the recipe's env: OpenMP unbound, as tests/conftest.py says why
env: {VLLM_CPU_KVCACHE_SPACE: "1", HF_HUB_OFFLINE: "1", VLLM_CPU_OMP_THREADS_BIND: nobind,
      OMP_NUM_THREADS: "1"}
readiness: {timeout_s: BOOT_S, max_tokens: 8}
default_profile: chunk-1024
profiles:
  chunk-1024:  # not an agent profile: readiness asks no tool call of this tool-less engine
    purpose: a 1024-token prefill chunk on the two-node tiny engine
    args: {max-num-batched-tokens: 1024, max-num-seqs: 4}
"""

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
def cluster_file(sshd: Sshd, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("measure-cluster")
    nodes = [{"name": name, "fabric_if": "lo", "fabric_ip": "127.0.0.1", "hcas": [hca],
              "python": sys.executable} for name, hca in (("node-a", "roce-a0"),
                                                          ("node-b", "roce-b0"))]
    return sshd.cluster_file(folder / "cluster.yaml", nodes, folder / "nodes",
                             master_port=free_port())


def _stopped_on_its_nodes(run_id: str, hosts: list[str]) -> None:
    """The run was served on `hosts` over SSH, and nothing of it is left running."""
    (row,) = [r for r in json.loads(run_cli("status", "--json").stdout) if r["run_id"] == run_id]
    assert row["status"] == "stopped"
    assert [n["ssh"] for n in row["nodes"]] == hosts
    assert not any(group_alive(n["pgid"]) for n in row["nodes"])


def test_bench_ab_serves_a_two_node_plan_on_the_cluster(cluster_file: Path, tmp_path: Path):
    recipe = tmp_path / "tiny-2node-ab.yaml"
    recipe.write_text(TWO_NODES.replace("BOOT_S", str(BOOT_S)))
    out = tmp_path / "ab.json"
    run_cli("bench", "ab", str(recipe), "--cluster", str(cluster_file), "--trust",
            "--profiles", "chunk-1024", "--reps", "1", "--rest", "0", "-L", "2048",
            "--param", "before_s=1", "--short-at", "0.3", "--port", str(free_port()),
            "--out", str(out), timeout=serves(1, work_s=300))
    data = json.loads(out.read_text())
    assert data["status"] == "complete"
    (sample,) = data["samples"]
    assert sample.get("error") is None and sample["samples"][-1]["long"]["prompt_tokens"] == 2048
    (boot,) = data["boots"]
    assert boot["mode"] == "cluster" and boot["nodes"] == ["node-a", "node-b"]
    assert boot["run_id"] == sample["run_id"] and boot["boot"]["kv_pool_tokens"] > 0
    _stopped_on_its_nodes(sample["run_id"], ["127.0.0.2", "127.0.0.3"])


def test_tune_serves_its_candidate_on_the_cluster(cluster_file: Path, tmp_path: Path):
    workload = tmp_path / "small.yaml"
    workload.write_text(WORKLOAD)
    out = tmp_path / "tune"
    result = run_cli("tune", "tiny-cpu", "--cluster", str(cluster_file), "--knee", str(KNEE),
                     "--workload", str(workload), "--slo", "ttft_p95=30s", "--agents", "1",
                     "--turns", "2", "--baselines", "", "--max-candidates", "1", "--reps", "1",
                     "--sweep-points", "0", "--rest", "0", "--budget", "20m", "--no-write",
                     "--port", str(free_port()), "--out", str(out), "--trust",
                     timeout=serves(1, work_s=600))
    state = json.loads((out / "tune.json").read_text())
    assert state["status"] == "complete" and state["request"]["cluster"] == str(cluster_file)
    ab = json.loads((out / "ab-agents.json").read_text())
    (sample,) = ab["samples"]
    assert sample.get("error") is None
    assert [row["name"] for row in state["result"]["table"]] == [sample["profile"]]
    (boot,) = ab["boots"]
    assert boot["mode"] == "cluster" and boot["nodes"] == ["node-a"]
    assert "goodput" in result.stdout
    _stopped_on_its_nodes(sample["run_id"], ["127.0.0.2"])
