"""Rendering recipe + profile + cluster + overrides into a ServePlan."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from sm121.cluster.spec import load_cluster
from sm121.errors import Sm121Error
from sm121.plan.render import PlanRequest, render_plan
from sm121.recipes.loader import load_recipe

ASYMMETRIC = {
    "name": "lab", "head": "spark1", "topology": "direct",
    "nodes": [
        {"name": "spark1", "ssh": "spark1", "mgmt_if": "enP7s7", "fabric_if": "enp1s0f0np0",
         "fabric_ip": "192.168.200.1", "hcas": ["rocep1s0f0", "roceP2p1s0f0"]},
        {"name": "spark2", "ssh": "spark2", "mgmt_if": "enP7s7", "fabric_if": "enP2p1s0f1np1",
         "fabric_ip": "192.168.200.2", "hcas": ["roceP2p1s0f1"]},
    ],
}


def cluster_file(tmp_path: Path, data: dict) -> Path:
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def plan_for(name: str, profile: str | None = None, cluster: Path | None = None, **overrides):
    return render_plan(PlanRequest(
        recipe=load_recipe(name), profile=profile,
        cluster=load_cluster(cluster) if cluster else None, overrides=overrides or None))


def flag(argv: list[str], name: str) -> str:
    """The value of an engine arg: one token `--name=value` (a recipe's args), or sm121's own
    `--name value`."""
    joined = [a.split("=", 1)[1] for a in argv if a.startswith(f"--{name}=")]
    return joined[-1] if joined else argv[argv.index(f"--{name}") + 1]


def test_ds4_agent_profile_values(tmp_path: Path) -> None:
    plan = plan_for("deepseek-v4-flash-eugr-agent", "agent", cluster_file(tmp_path, ASYMMETRIC))
    args = plan.engine_args
    assert args["max-num-batched-tokens"] == 2048
    assert args["max-num-seqs"] == 6
    assert args["max-cudagraph-capture-size"] == 36
    assert args["gpu-memory-utilization"] == 0.78
    assert args["max-model-len"] == 1048576
    assert plan.derived["max-cudagraph-capture-size"].how == "max-num-seqs x (k+1) = 6 x 6"
    head = plan.head.argv
    assert flag(head, "max-cudagraph-capture-size") == "36"
    assert json.loads(flag(head, "speculative-config"))["num_speculative_tokens"] == 5


def test_capture_size_follows_max_num_seqs_override(tmp_path: Path) -> None:
    plan = plan_for("deepseek-v4-flash-eugr-agent", "agent", cluster_file(tmp_path, ASYMMETRIC),
                    **{"max-num-seqs": 4})
    assert plan.engine_args["max-cudagraph-capture-size"] == 24


def test_each_node_gets_its_own_fabric_values(tmp_path: Path) -> None:
    plan = plan_for("deepseek-v4-flash-eugr-agent", "agent", cluster_file(tmp_path, ASYMMETRIC))
    head, worker = plan.nodes
    assert (head.name, worker.name) == ("spark1", "spark2")
    assert head.env["NCCL_IB_HCA"] == "rocep1s0f0,roceP2p1s0f0"
    assert worker.env["NCCL_IB_HCA"] == "roceP2p1s0f1"
    assert worker.env["NCCL_SOCKET_IFNAME"] == "enP2p1s0f1np1"
    assert worker.env["VLLM_HOST_IP"] == "192.168.200.2"
    # The docker line carries the node's own values, never the head's.
    assert "NCCL_IB_HCA=roceP2p1s0f1" in worker.argv
    assert "NCCL_IB_HCA=rocep1s0f0,roceP2p1s0f0" not in worker.argv


def test_multi_node_native_launch_flags(tmp_path: Path) -> None:
    plan = plan_for("deepseek-v4-flash-src", cluster=cluster_file(tmp_path, ASYMMETRIC))
    head, worker = plan.nodes
    assert flag(head.argv, "node-rank") == "0" and "--headless" not in head.argv
    assert flag(worker.argv, "node-rank") == "1" and "--headless" in worker.argv
    assert flag(worker.argv, "master-addr") == "192.168.200.1"
    assert flag(head.argv, "nnodes") == "2" and flag(head.argv, "tensor-parallel-size") == "2"
    assert [n.start_order for n in plan.nodes] == [0, 1]


def test_docker_runtime_renders_the_full_run_line(tmp_path: Path) -> None:
    plan = plan_for("deepseek-v4-flash-eugr-agent", "agent", cluster_file(tmp_path, ASYMMETRIC))
    argv = plan.head.argv
    assert argv[:3] == ["docker", "run", "-d"]
    for expected in (["--gpus", "all"], ["--ipc", "host"], ["--network", "host"],
                     ["--device", "/dev/infiniband"]):
        index = argv.index(expected[0])
        assert argv[index:index + 2] == expected
    image = argv.index("eugr/spark-vllm-b12x:sm121")
    assert argv[image + 1:image + 3] == ["vllm", "serve"]


def test_secrets_are_passed_by_name_and_never_rendered(tmp_path: Path) -> None:
    plan = plan_for("deepseek-v4-flash-eugr-agent", "agent", cluster_file(tmp_path, ASYMMETRIC))
    assert plan.head.pass_env == ["HF_TOKEN"]
    assert "HF_TOKEN" not in plan.head.env
    dumped = plan.model_dump_json()
    assert "${HF_TOKEN}" not in dumped
    index = plan.head.argv.index("HF_TOKEN")
    assert plan.head.argv[index - 1] == "-e"


def test_missing_fabric_values_name_the_node(tmp_path: Path) -> None:
    data = json.loads(json.dumps(ASYMMETRIC))
    del data["nodes"][1]["hcas"]
    with pytest.raises(Sm121Error) as caught:
        plan_for("deepseek-v4-flash-eugr-agent", "agent", cluster_file(tmp_path, data))
    assert "nodes[1] (spark2)" in str(caught.value) and "hcas" in str(caught.value)


def test_multi_node_recipe_without_cluster_plans_with_placeholders() -> None:
    plan = plan_for("deepseek-v4-flash-eugr-agent", "agent")
    assert [n.name for n in plan.nodes] == ["node0", "node1"]
    (warning,) = [f for f in plan.findings if f.field != "engine.version"]  # test_vllm_flags
    assert warning.severity.value == "warning" and "--cluster" in warning.fix


def test_cluster_with_too_few_nodes(tmp_path: Path) -> None:
    with pytest.raises(Sm121Error, match="needs 4 nodes"):
        plan_for("glm-5.2", cluster=cluster_file(tmp_path, ASYMMETRIC))


def test_cluster_head_must_be_a_node(tmp_path: Path) -> None:
    data = {**ASYMMETRIC, "head": "spark9"}
    with pytest.raises(Sm121Error, match="head"):
        load_cluster(cluster_file(tmp_path, data))


def test_overrides_are_validated_like_profiles() -> None:
    with pytest.raises(Sm121Error, match="max-num-seq"):
        plan_for("tiny-cpu", "agent", **{"max-num-seq": 4})


def test_unknown_profile_lists_the_profiles() -> None:
    with pytest.raises(Sm121Error) as caught:
        plan_for("tiny-cpu", "agnet")
    assert "agent" in caught.value.hint


def test_tiny_cpu_renders_a_local_native_command() -> None:
    plan = plan_for("tiny-cpu", "batch")
    (node,) = plan.nodes
    assert node.ssh is None and node.runtime == "native"
    assert node.argv[:3] == ["python", "-m", "vllm.entrypoints.openai.api_server"]
    assert flag(node.argv, "max-num-batched-tokens") == "8192"
    assert node.env["VLLM_CPU_KVCACHE_SPACE"] == "2"
    assert plan.readiness.url == "http://127.0.0.1:8000"
    assert plan.request_policy.params["repetition_penalty"].action.value == "strip"


def test_a_render_finds_the_adapter_once_and_the_plan_carries_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 31: found once where the recipe meets its engine, then carried, never looked up
    again (8 lookups per render before); a plan read back from JSON finds the same one."""
    from sm121.engines.registry import adapter_for
    from sm121.plan import model, render, trust, validate
    from sm121.plan.model import ServePlan

    found = []

    def counted(kind: object) -> object:
        found.append(kind)
        return adapter_for(kind)  # type: ignore[arg-type]

    def refused(*_: object) -> object:
        raise AssertionError("looked up again")

    monkeypatch.setattr(render, "adapter_for", counted)
    for module in (validate, trust):
        monkeypatch.setattr(module, "adapter_for", refused)
    monkeypatch.setattr(model, "adapter_of", refused)
    plan = render_plan(PlanRequest(recipe=load_recipe("tiny-cpu"), profile="agent",
                                   overrides={"max-num-seqs": 8}, argv_check=False))
    assert len(found) == 1 and plan.adapter.kind.value == plan.engine
    monkeypatch.undo()
    again = ServePlan.model_validate(json.loads(plan.model_dump_json()))
    assert again == plan and again.adapter is plan.adapter
