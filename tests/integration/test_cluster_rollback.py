"""A cluster serve that fails in any phase, by an error, a bug or Ctrl-C, leaves no node
running. Real sshd on loopback, two nodes, a stand-in engine (a sleeping python process,
named as such in its recipe); the failure is injected into each phase of the launcher."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from support import free_port
from support.sshd import Sshd

from sm121.errors import Sm121Error
from sm121.hosts.processes import group_alive
from sm121.launch import cluster_serve, node_ops
from sm121.launch.readiness import NotReady, ReadinessResult
from sm121.plan.build import build_plan
from sm121.runs.state import list_runs

pytestmark = [pytest.mark.integration, pytest.mark.own_engines]

STAND_IN = """\
name: stand-in-rollback
description: "stand-in engine: a sleeping python process, not vLLM; tests the rollback only"
model: {id: stand-in, source: path, path: /nonexistent/weights}
runtime: {kind: native, command: [python, -c, "import time; time.sleep(600)"]}
parallelism: {tp: 2, nodes: 2}
hooks:
  before_serve: [mark]
  custom: {mark: "true"}
readiness: {timeout_s: 60}
"""


def _boom(exc: BaseException) -> Callable[..., None]:
    def fail(*args: object, **kwargs: object) -> None:
        raise exc
    return fail


def _prepare_fails_on_the_worker(mp: pytest.MonkeyPatch) -> None:
    real = cluster_serve.prepare_slot

    def prepare(node, run_id):  # type: ignore[no-untyped-def]
        if node.role == "worker":
            raise RuntimeError("injected: prepare")
        return real(node, run_id)
    mp.setattr(cluster_serve, "prepare_slot", prepare)


def _launch_files_fail(mp: pytest.MonkeyPatch) -> None:
    real, calls = cluster_serve.save_launch, []

    def save(*args):  # type: ignore[no-untyped-def]
        calls.append(1)
        if len(calls) > 1:  # the first is the run's own, before the launch begins
            raise OSError("injected: disk full")
        return real(*args)
    mp.setattr(cluster_serve, "save_launch", save)


def _worker_started_but_its_pid_was_lost(mp: pytest.MonkeyPatch) -> None:
    real = cluster_serve.ClusterLaunch._start_one

    def start(self, slot):  # type: ignore[no-untyped-def]
        real(self, slot)
        if slot.plan.role == "worker":
            slot.process.pid = slot.process.pgid = None
            raise RuntimeError("injected: after the worker started")
    mp.setattr(cluster_serve.ClusterLaunch, "_start_one", start)


class _InterruptedLiveness(node_ops.Liveness):
    def __call__(self) -> bool:
        raise KeyboardInterrupt


def _ready(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(cluster_serve, "wait_ready", lambda *a, **k: ReadinessResult(1.0, 2.0, 8))


Inject = Callable[[pytest.MonkeyPatch], object]
# phase -> (the injection, what serve_cluster raises, how many engines had started)
PHASES: dict[str, tuple[Inject, type[BaseException], int]] = {
    "prepare": (_prepare_fails_on_the_worker, Sm121Error, 0),
    "launch files": (_launch_files_fail, Sm121Error, 0),
    "hooks (Ctrl-C)": (lambda mp: mp.setattr(cluster_serve, "run_hooks",
                                             _boom(KeyboardInterrupt())), KeyboardInterrupt, 0),
    "start (pid lost)": (_worker_started_but_its_pid_was_lost, Sm121Error, 2),
    # The head's start group settles before the worker's starts.
    "settle (Ctrl-C)": (lambda mp: mp.setattr(cluster_serve, "Liveness", _InterruptedLiveness),
                        KeyboardInterrupt, 1),
    "readiness": (lambda mp: mp.setattr(cluster_serve, "wait_ready", _boom(NotReady(
        "timed out waiting for a first generation"))), Sm121Error, 2),
    "after ready (a bug)": (lambda mp: (_ready(mp), mp.setattr(
        cluster_serve.startup_history, "record", _boom(ValueError("injected: bug")))),
        Sm121Error, 2),
}


@pytest.mark.parametrize("phase", list(PHASES))
def test_a_failure_in_any_phase_leaves_no_node_running(
        phase: str, sshd: Sshd, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    recipe = tmp_path / "stand-in.yaml"
    recipe.write_text(STAND_IN)
    nodes = [{"name": n, "fabric_if": "lo", "fabric_ip": "127.0.0.1", "hcas": [f"{n}0"],
              "python": sys.executable} for n in ("node-a", "node-b")]
    state = tmp_path / "nodes"
    cluster = sshd.cluster_file(tmp_path / "cluster.yaml", nodes, state, master_port=free_port())
    plan = build_plan(str(recipe), None, str(cluster), {}, free_port(), "127.0.0.1")
    monkeypatch.setattr(cluster_serve, "SETTLE_S", 0.3)
    inject, raised, started = PHASES[phase]
    inject(monkeypatch)
    earlier = {r.run_id for r in list_runs()}
    with pytest.raises(raised):
        cluster_serve.serve_cluster(plan, trust=True)
    pid_files = list(state.glob("runs/*/node-*/engine.pid"))
    assert len(pid_files) == started
    for pid_file in pid_files:
        assert not group_alive(int(pid_file.read_text())), f"{pid_file.parent.name} left running"
    # This serve's run, told by its id: `created` has whole seconds, and the phase before
    # may have made its run in the same second.
    (run,) = [r for r in list_runs() if r.run_id not in earlier]
    assert run.status == ("stopped" if raised is KeyboardInterrupt else "failed")
    assert run.failure
