"""`stop` signals only what sm121 started, run saves from many threads, and run folders that
stay where they belong."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import invoke_cli

from sm121.errors import Sm121Error
from sm121.launch import processes, runtimes
from sm121.launch.run_state import NodeProcess, RunInfo, create_run_dir, run_dir


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
from sm121.launch.run_state import update_run

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
