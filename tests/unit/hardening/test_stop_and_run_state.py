"""`stop` signals only what sm121 started, run saves from many threads, and run folders that
stay where they belong."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import invoke_cli

from sm121.errors import Sm121Error
from sm121.hosts import processes
from sm121.launch import runtimes
from sm121.runs.state import NodeProcess, RunInfo, create_run_dir, run_dir


@pytest.fixture
def unrelated_group() -> Iterator[int]:
    """A process group sm121 did not start (its own session, like an engine's)."""
    sleeper = subprocess.Popen(["setsid", "sleep", "300"], stdin=subprocess.DEVNULL)
    try:
        for _ in range(50):
            if processes.group_alive(sleeper.pid):
                break
            threading.Event().wait(0.1)
        yield sleeper.pid  # setsid's child keeps the pid: sleep runs in the new session
    finally:
        os.killpg(sleeper.pid, 15)
        sleeper.wait(timeout=10)


def _run_with(run_id: str, pgid: int, status: str, **identity: str | None) -> RunInfo:
    folder = create_run_dir(run_id)
    run = RunInfo(run_id=run_id, recipe="r", profile=None, created="2026-12-01T00:00:00+00:00",
                  base_url="http://127.0.0.1:1", model="m", status=status,  # type: ignore[arg-type]
                  nodes=[NodeProcess(name="local", pid=pgid, pgid=pgid, log=str(folder / "l"),
                                     pid_file=str(folder / "p"), **identity)])
    run.save()
    return run


def test_a_reused_pgid_survives_stop_and_stop_all(unrelated_group: int) -> None:
    suffix = os.urandom(3).hex()
    # A stopped run whose pgid now belongs to someone else, with the identity it had.
    _run_with(f"reused-stopped-{suffix}", unrelated_group, "stopped",
              boot_id=processes.boot_id(), start_time="1")
    # A run still marked ready: one with another start time, one from before a reboot, one
    # written without identity (an older sm121).
    _run_with(f"reused-ready-{suffix}", unrelated_group, "ready",
              boot_id=processes.boot_id(), start_time="1")
    _run_with(f"reused-reboot-{suffix}", unrelated_group, "ready",
              boot_id="another-boot", start_time=processes.start_time(unrelated_group))
    _run_with(f"reused-legacy-{suffix}", unrelated_group, "ready")
    for run_id in ("stopped", "ready"):
        invoke_cli("stop", f"reused-{run_id}-{suffix}")
        assert processes.group_alive(unrelated_group), run_id
    invoke_cli("stop", "--all")
    assert processes.group_alive(unrelated_group)
    statuses = {r["run_id"]: r["status"] for r in json.loads(invoke_cli("status", "--json").stdout)}
    assert statuses[f"reused-ready-{suffix}"] in ("stopped", "exited")


def test_stop_still_stops_the_process_it_started(tmp_path: Path) -> None:
    process = processes.spawn(["sleep", "300"], os.environ, tmp_path / "log")
    mark = processes.identity(process.pid)
    _run_with(f"own-{os.urandom(3).hex()}", process.pid, "ready", boot_id=mark.boot_id,
              start_time=mark.start_time)
    invoke_cli("stop", "--all")
    process.wait(timeout=30)
    assert not processes.group_alive(process.pid)


def test_concurrent_saves_of_one_run(tmp_path: Path) -> None:
    run = _run_with(f"threads-{os.urandom(3).hex()}", 1, "starting")
    errors: list[BaseException] = []

    def save_many() -> None:
        try:
            for _ in range(200):
                run.save()
        except BaseException as exc:  # noqa: BLE001 - counted, reported below
            errors.append(exc)

    threads = [threading.Thread(target=save_many) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert RunInfo.model_validate_json((run.directory / "run.json").read_text()).run_id == run.run_id
    assert sorted(p.name for p in run.directory.iterdir()) == ["run.json"]  # no temp left


_COUNT_UP = """
import sys
from sm121.runs.state import update_run

def count(run):
    run.restarts += 1

for _ in range(int(sys.argv[2])):
    update_run(sys.argv[1], count)
"""


def test_concurrent_updates_of_one_run_from_processes_lose_nothing() -> None:
    """The watchdog, serve's gateway launcher and `stop` read, change and save one run.json:
    three processes counting up at once end at the sum (a plain load-then-save loses some)."""
    run = _run_with(f"updates-{os.urandom(3).hex()}", 1, "ready")
    writers = [subprocess.Popen([sys.executable, "-c", _COUNT_UP, run.run_id, "60"])
               for _ in range(3)]
    assert [w.wait(timeout=120) for w in writers] == [0, 0, 0]
    assert RunInfo.model_validate_json((run.directory / "run.json").read_text()).restarts == 180


@pytest.mark.parametrize("run_id", ["../../x", "..", "a/b", "/etc"])
def test_a_run_id_cannot_name_a_folder_outside_the_runs(run_id: str) -> None:
    with pytest.raises(Sm121Error, match="does not name a folder"):
        run_dir(run_id)


def test_a_link_in_the_runs_folder_is_not_followed_out(sm121_home: Path, tmp_path: Path) -> None:
    (sm121_home / "runs").mkdir(exist_ok=True)
    (sm121_home / "runs" / "linked").symlink_to(tmp_path)
    with pytest.raises(Sm121Error, match="does not name a folder"):
        run_dir("linked")


@pytest.mark.parametrize(("run_id", "node"), [("r1", "../../x"), ("../x", "n1"), ("r1", ".."),
                                              ("r1", "a/b")])
def test_node_folders_stay_under_the_state_dir(run_id: str, node: str) -> None:
    with pytest.raises(Sm121Error, match="is not under"):
        runtimes.node_files("~/state", "/home/u", run_id, node)
    assert runtimes.node_files("~/state", "/home/u", "r1", "n1").run_dir == \
        "/home/u/state/runs/r1/n1"


@pytest.fixture
def leaderless_group(tmp_path: Path) -> Iterator[tuple[int, processes.Identity]]:
    """A group sm121 started whose leader has exited while its children live on (an engine
    whose API server died and left its workers)."""
    ready = tmp_path / "children-started"
    process = processes.spawn(["sh", "-c", f"sleep 300 & sleep 300 & touch {ready}; exit 0"],
                              os.environ, tmp_path / "log")
    mark = processes.identity(process.pid)
    process.wait(timeout=30)  # the leader is gone (reaped), its two children are not
    for _ in range(100):
        if ready.exists():
            break
        threading.Event().wait(0.05)
    assert len(processes.group_members(process.pid)) == 2
    try:
        yield process.pid, mark
    finally:
        if processes.group_alive(process.pid):
            os.killpg(process.pid, 9)


def test_stop_signals_the_group_while_any_member_lives(
        leaderless_group: tuple[int, processes.Identity]) -> None:
    pgid, mark = leaderless_group
    run_id = f"leaderless-{os.urandom(3).hex()}"
    _run_with(run_id, pgid, "ready", boot_id=mark.boot_id, start_time=mark.start_time)
    statuses = {r["run_id"]: r["status"] for r in json.loads(invoke_cli("status", "--json").stdout)}
    assert statuses[run_id] == "ready"  # not "exited": its workers still hold the engine
    invoke_cli("stop", run_id)
    assert not processes.group_alive(pgid)


def test_a_leaderless_group_is_not_ours_when_it_started_before_the_record(
        leaderless_group: tuple[int, processes.Identity]) -> None:
    """Its members started before the leader sm121 recorded: the id was reused."""
    pgid, mark = leaderless_group
    later = processes.Identity(mark.boot_id, str(int(mark.start_time or 0) + 10**9))
    for other in (later, processes.Identity("another-boot", mark.start_time)):
        processes.stop_group(pgid, other, grace_s=0.5)
        assert len(processes.group_members(pgid)) == 2
        assert not processes.group_alive_as(pgid, other)
    assert processes.group_alive_as(pgid, mark)


def test_a_cluster_launch_keeps_what_others_saved_meanwhile() -> None:
    """ClusterLaunch saved its own copy of the run whole, past update_run's lock: what the
    watchdog, the restart record or the gateway launcher saved in between was lost."""
    from sm121.launch.cluster_serve import ClusterLaunch, _roll_back
    from sm121.plan.build import build_plan
    from sm121.runs.state import load_run, update_run

    plan = build_plan("tiny-cpu", None, None, None, 8000, "127.0.0.1")
    launch = ClusterLaunch(plan, lambda _: None)

    def elsewhere(run: RunInfo) -> None:  # another process, while the launch is under way
        run.gateway_url, run.restarts = "http://127.0.0.1:8100", 2

    update_run(launch.run.run_id, elsewhere)
    launch.run.timings.port_open_s = 1.5
    with pytest.raises(Sm121Error, match="boom"):
        _roll_back(launch, Sm121Error("boom", "a node failed"))
    saved = load_run(launch.run.run_id)
    assert (saved.gateway_url, saved.restarts) == ("http://127.0.0.1:8100", 2)
    assert saved.status == "failed" and saved.failure == "boom"
    assert saved.timings.port_open_s == 1.5  # and what the launch owns is written


def test_the_node_scripts_read_a_leaderless_group_as_the_local_stop_does(
        leaderless_group: tuple[int, processes.Identity]) -> None:
    """The scripts a cluster node runs over ssh (alive, stop) hold the same rule as
    processes.is_same_group: the leader gone, live members that started no earlier than it
    are the group sm121 started; earlier members mean a reused id, never signalled."""
    from sm121.launch.runtimes import group_alive_script, group_stop_script

    pgid, mark = leaderless_group

    def node(script: str) -> str:
        return subprocess.run(["sh", "-c", script], capture_output=True, text=True,
                              timeout=60).stdout.split()[-1]

    later = str(int(mark.start_time or 0) + 10**9)
    assert node(group_alive_script(pgid, mark.boot_id, later)) == "gone"
    assert node(group_stop_script(pgid, mark.boot_id, later, grace_s=0.5)) == "gone"
    assert len(processes.group_members(pgid)) == 2
    assert node(group_alive_script(pgid, "another-boot", mark.start_time)) == "gone"
    assert node(group_alive_script(pgid, mark.boot_id, mark.start_time)) == "alive"
    node(group_stop_script(pgid, mark.boot_id, mark.start_time, grace_s=2))
    assert not processes.group_alive(pgid)


def test_the_node_stop_reads_an_unreaped_member_as_gone(tmp_path: Path) -> None:
    """A node whose init reaps orphans late keeps an engine that exited as a zombie; `kill -0`
    still answers for its group. The node's stop script read that as an engine that would
    not stop (`sm121 stop` failed after its grace and 30 s more); the local stop never did.
    Here the test is the parent that does not reap: the group is a zombie leader only."""
    from sm121.launch.runtimes import group_alive_script, group_stop_script

    process = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        mark = processes.identity(process.pid)
        os.kill(process.pid, 9)
        for _ in range(100):  # until the kernel has made it a zombie
            if not processes.group_alive(process.pid):
                break
            threading.Event().wait(0.05)
        assert not processes.group_alive(process.pid)
        os.killpg(process.pid, 0)  # the group still answers `kill -0`

        def node(script: str) -> str:
            return subprocess.run(["sh", "-c", script], capture_output=True, text=True,
                                  timeout=60).stdout.split()[-1]

        assert node(group_alive_script(process.pid, mark.boot_id, mark.start_time)) == "gone"
        started = time.monotonic()
        assert node(group_stop_script(process.pid, mark.boot_id, mark.start_time,
                                      grace_s=5)) == "gone"
        assert time.monotonic() - started < 5  # not the grace, and not the 30 s after KILL
    finally:
        process.wait(timeout=30)
