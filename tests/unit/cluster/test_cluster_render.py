"""Rendering for clusters: ssh targets, homes, interpreters, the headless worker, Ray, and the
exact docker commands a node runs (no docker engine runs here: the commands are the test)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from sm121.cluster.spec import load_cluster
from sm121.errors import Sm121Error
from sm121.launch import runtimes
from sm121.plan.render import PlanRequest, render_plan
from sm121.recipes.loader import load_recipe

NODES = [
    {"name": "spark1", "ssh": "spark1.lan", "fabric_if": "enp1s0f0np0",
     "fabric_ip": "192.168.200.1", "hcas": ["rocep1s0f0", "roceP2p1s0f0"], "home": "/home/ops"},
    {"name": "spark2", "ssh": "admin@spark2.lan", "fabric_if": "enP2p1s0f1np1",
     "fabric_ip": "192.168.200.2", "hcas": ["roceP2p1s0f1"]},
]


def cluster(tmp_path: Path, **fields: object) -> Path:
    data = {"name": "lab", "head": "spark1", "nodes": NODES, "ssh_user": "ops", "ssh_port": 2222,
            "ssh_config": "~/.ssh/sm121_config", "state_dir": "~/sm121-state", **fields}
    path = tmp_path / "cluster.yaml"
    path.write_text(json.dumps(data))
    return path


def plan_for(name: str, path: Path, profile: str | None = None, recipe_file: Path | None = None):
    recipe = load_recipe(str(recipe_file) if recipe_file else name)
    return render_plan(PlanRequest(recipe=recipe, profile=profile, cluster=load_cluster(path)))


def test_ssh_targets_ports_and_state_dirs(tmp_path: Path) -> None:
    head, worker = plan_for("deepseek-v4-flash-eugr-agent", cluster(tmp_path), "agent").nodes
    assert head.ssh == "ops@spark1.lan" and worker.ssh == "admin@spark2.lan"
    assert head.ssh_port == worker.ssh_port == 2222
    assert head.ssh_config == "~/.ssh/sm121_config" and head.state_dir == "~/sm121-state"
    assert [head.start_order, worker.start_order] == [0, 1]
    assert (head.wait_before_next, worker.wait_before_next) == ("process started",
                                                               "first generation")


def test_docker_mounts_use_the_nodes_home(tmp_path: Path) -> None:
    head, worker = plan_for("deepseek-v4-flash-eugr-agent", cluster(tmp_path), "agent").nodes
    assert "/home/ops/.cache/huggingface:/root/.cache/huggingface:rw" in head.argv
    # Home unknown at plan time: it stays `~` in the plan and is expanded at launch.
    assert "~/.cache/vllm:/root/.cache/vllm:rw" in worker.argv
    launched = runtimes.resolved_argv(worker, "/home/admin")
    assert "/home/admin/.cache/vllm:/root/.cache/vllm:rw" in launched
    assert not [a for a in launched if a.startswith("~")]


def test_the_exact_docker_start_command_per_node(tmp_path: Path) -> None:
    _, worker = plan_for("deepseek-v4-flash-eugr-agent", cluster(tmp_path), "agent").nodes
    files = runtimes.NodeFiles(run_dir="/home/admin/sm121-state/runs/r1/spark2")
    argv = runtimes.resolved_argv(worker, "/home/admin")
    script = runtimes.docker_start_script(argv, worker.container or "", files, secrets=True)
    lines = script.splitlines()
    run_line = next(line for line in lines if line.startswith("docker run "))
    run_argv = shlex.split(run_line.split(" > ")[0])
    assert run_argv[:6] == ["docker", "run", "-d", "--name",
                            "sm121-deepseek-v4-flash-eugr-agent-spark2", "--gpus"]
    for pair in (["--gpus", "all"], ["--ipc", "host"], ["--network", "host"],
                 ["--device", "/dev/infiniband"]):
        index = run_argv.index(pair[0])
        assert run_argv[index:index + 2] == pair
    env = [run_argv[i + 1] for i, a in enumerate(run_argv) if a == "-e"]
    assert "NCCL_IB_HCA=roceP2p1s0f1" in env and "NCCL_SOCKET_IFNAME=enP2p1s0f1np1" in env
    assert "VLLM_HOST_IP=192.168.200.2" in env and "HF_TOKEN" in env  # the secret by name only
    assert "--headless" in run_argv and run_argv[run_argv.index("--node-rank") + 1] == "1"
    assert "docker container inspect sm121-deepseek-v4-flash-eugr-agent-spark2" in script
    assert "docker logs -f sm121-deepseek-v4-flash-eugr-agent-spark2" in script
    assert 'export "$line"' in script  # secrets arrive on stdin


def test_docker_stop_and_status_commands_act_only_on_the_container_sm121_started() -> None:
    stop = runtimes.container_stop_script("sm121-x-spark2", "abc123", "/r/logs.pid", grace_s=30)
    lines = stop.splitlines()
    assert lines[0] == ("[ \"$(docker container inspect -f '{{.Id}}' sm121-x-spark2 2> /dev/null)\" "
                        "= abc123 ] || { echo gone; exit 0; }")
    assert lines[1:3] == ["docker stop -t 30 abc123 > /dev/null 2>&1 || true",
                          "docker rm -f abc123 > /dev/null 2>&1 || true"]
    alive = runtimes.container_alive_script("sm121-x-spark2", "abc123")
    assert "{{.State.Running}}" in alive and "= abc123 ]" in alive
    # A run recorded without the container's id is never acted on.
    assert runtimes.container_stop_script("n", None, "/p").startswith("false || ")


def test_a_vllm_serve_worker_keeps_vllms_own_headless_flag(tmp_path: Path) -> None:
    head, worker = plan_for("deepseek-v4-flash-src", cluster(tmp_path)).nodes
    assert head.argv[:2] == worker.argv[:2] == ["vllm", "serve"]
    assert "--headless" in worker.argv and "--headless" not in head.argv


def test_native_multi_node_worker_runs_vllms_headless_path(tmp_path: Path) -> None:
    recipe = tmp_path / "tiny2.yaml"
    recipe.write_text(json.dumps({
        "name": "tiny2", "model": {"id": "tiny", "source": "tiny"},
        "runtime": {"kind": "native", "command": ["python", "-m",
                                                  "vllm.entrypoints.openai.api_server"]},
        "parallelism": {"tp": 2, "nodes": 2}}))
    nodes = [dict(NODES[0], python="/opt/vllm/bin/python"), NODES[1]]
    head, worker = plan_for("", cluster(tmp_path, nodes=nodes, master_port=29600),
                            recipe_file=recipe).nodes
    assert head.argv[:3] == ["/opt/vllm/bin/python", "-m", "vllm.entrypoints.openai.api_server"]
    assert worker.argv[:3] == ["python", "-m", "sm121.engines.vllm.headless"]
    assert worker.argv[worker.argv.index("--master-port") + 1] == "29600"
    assert worker.argv[worker.argv.index("--master-addr") + 1] == "192.168.200.1"


def test_ray_backend_renders_ray_nodes_in_containers(tmp_path: Path) -> None:
    recipe = tmp_path / "ray.yaml"
    recipe.write_text(json.dumps({
        "name": "ray2", "model": {"id": "m", "source": "hf", "hf_id": "org/m"},
        "runtime": {"kind": "docker", "image": "img:1"},
        "parallelism": {"tp": 2, "nodes": 2, "backend": "ray"}}))
    head, worker = plan_for("", cluster(tmp_path), recipe_file=recipe).nodes
    image = head.argv.index("img:1")
    assert head.argv[image + 1:image + 3] == ["sh", "-c"]
    assert "ray start --head --port=6379" in head.argv[image + 3]
    assert head.argv[image + 5] == "192.168.200.1"  # the head's own fabric IP
    assert head.argv[image + 6:image + 8] == ["vllm", "serve"]
    assert "--distributed-executor-backend" in head.argv and "--nnodes" not in head.argv
    w_image = worker.argv.index("img:1")
    assert worker.argv[w_image + 1:] == ["ray", "start", "--block",
                                         "--address=192.168.200.1:6379",
                                         "--node-ip-address=192.168.200.2",
                                         "--disable-usage-stats"]


def test_ray_backend_needs_docker(tmp_path: Path) -> None:
    recipe = tmp_path / "ray.yaml"
    recipe.write_text(json.dumps({
        "name": "ray2", "model": {"id": "m", "source": "hf", "hf_id": "org/m"},
        "parallelism": {"tp": 2, "nodes": 2, "backend": "ray"}}))
    with pytest.raises(Sm121Error, match="ray needs the docker runtime"):
        plan_for("", cluster(tmp_path), recipe_file=recipe)
