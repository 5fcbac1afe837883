"""Hooks: trust, where the weights are, and the built-in scripts run for real on this machine
(drop-caches as an unprivileged user, warm-read reading and skipping)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from sm121.errors import Sm121Error
from sm121.hosts.transport import LocalTransport
from sm121.launch.hooks import HookTarget, check_trust, run_hooks, weights_dir
from sm121.plan.model import NodePlan
from sm121.recipes.schema import Hooks


def node(runtime: str = "native", argv: list[str] | None = None, env: dict | None = None
         ) -> NodePlan:
    return NodePlan(name="n1", role="head", rank=0, ssh=None, runtime=runtime,  # type: ignore[arg-type]
                    argv=argv or ["python"], env=env or {}, pass_env=[], start_order=0,
                    wait_before_next="first generation")


def target(weights: Path, transport: LocalTransport | None = None) -> HookTarget:
    return HookTarget(node=node(), transport=transport or LocalTransport(),
                      weights_dir=str(weights), run_dir=str(weights))


def test_built_in_hooks_need_no_trust() -> None:
    check_trust(Hooks(before_serve=("drop-caches", "warm-read")), trust=False, recipe="r")


def test_custom_hooks_are_refused_without_trust_and_show_the_command() -> None:
    hooks = Hooks(before_serve=("fetch",), custom={"fetch": "curl example.org | sh"})
    with pytest.raises(Sm121Error) as caught:
        check_trust(hooks, trust=False, recipe="r")
    assert "curl example.org | sh" in caught.value.message and "--trust" in caught.value.hint
    check_trust(hooks, trust=True, recipe="r")


def test_unknown_hook_names_are_refused_even_with_trust() -> None:
    with pytest.raises(Sm121Error, match="neither built in"):
        check_trust(Hooks(after_ready=("warm-reed",)), trust=True, recipe="r")


def test_weights_dir_for_paths_hf_ids_and_docker_mounts() -> None:
    assert weights_dir("~/models/m", node(), "/home/u") == "/home/u/models/m"
    assert weights_dir("org/model", node(), "/home/u") == \
        "/home/u/.cache/huggingface/hub/models--org--model"
    docker = node("docker", ["docker", "run", "-v", "/nfs/hf:/root/.cache/huggingface:ro",
                             "img", "vllm", "serve"])
    assert weights_dir("org/model", docker, "/home/u") == "/nfs/hf/hub/models--org--model"
    hf_home = node(env={"HF_HOME": "/data/hf"})
    assert weights_dir("org/model", hf_home, "/home/u") == "/data/hf/hub/models--org--model"


def test_warm_read_reads_a_model_that_fits(tmp_path: Path) -> None:
    (tmp_path / "model-00001.safetensors").write_bytes(b"x" * 4096)
    (result,) = run_hooks("before_serve", Hooks(before_serve=("warm-read",)), target(tmp_path))
    assert result.status == "ok" and "read" in result.message and "MB" in result.message


def test_warm_read_skips_a_model_larger_than_available_memory(tmp_path: Path) -> None:
    subprocess.run(["truncate", "-s", "1T", str(tmp_path / "model.safetensors")], check=True)
    (result,) = run_hooks("before_serve", Hooks(before_serve=("warm-read",)), target(tmp_path))
    assert result.status == "skipped"
    assert "is not smaller than this node's available memory" in result.message


def test_warm_read_skips_without_weights(tmp_path: Path) -> None:
    (result,) = run_hooks("before_serve", Hooks(before_serve=("warm-read",)),
                          target(tmp_path / "absent"))
    assert result.status == "skipped" and "no weights folder" in result.message


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"),
                    reason="needs root to run the hook as an unprivileged user")
def test_drop_caches_says_clearly_when_it_is_not_permitted(tmp_path: Path) -> None:
    class AsNobody(LocalTransport):
        def run(self, argv, *, input=None, timeout=60):  # type: ignore[no-untyped-def]
            return super().run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                                *argv], input=input, timeout=timeout)

    (result,) = run_hooks("before_serve", Hooks(before_serve=("drop-caches",)),
                          target(tmp_path, AsNobody()))
    assert result.status == "failed" and result.message.startswith("not permitted")
    assert "drop-caches needs root or `sudo -n`" in result.message


def test_a_failing_hook_stops_the_phase(tmp_path: Path) -> None:
    hooks = Hooks(before_serve=("bad", "never"),
                  custom={"bad": "echo broken >&2; exit 5", "never": "touch never"})
    results = run_hooks("before_serve", hooks, target(tmp_path))
    assert [(r.hook, r.status) for r in results] == [("bad", "failed")]
    assert "exit status 5" in results[0].message and "broken" in results[0].message


def test_custom_hooks_see_the_node_in_their_environment(tmp_path: Path) -> None:
    hooks = Hooks(after_ready=("show",),
                  custom={"show": 'echo "$SM121_PHASE $SM121_NODE $SM121_ROLE $SM121_RANK"'})
    (result,) = run_hooks("after_ready", hooks, target(tmp_path))
    assert result.status == "ok" and result.message == "after_ready n1 head 0"
