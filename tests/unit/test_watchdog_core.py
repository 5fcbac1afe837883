"""The one supervision loop of both watchdogs (launch/watchdog_core.py): boot, watch, and
after each death the policy's word; a stop (SIGTERM) is the normal way out."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from sm121.launch.watchdog_core import Death, WatchdogCore, stop_on_sigterm
from sm121.runs.state import RunInfo, create_run_dir, load_run


class Scripted(WatchdogCore):
    """Dies as told; `allowed` restarts, then the policy gives up."""

    def __init__(self, run_id: str, deaths: list[Death], allowed: int, booted: bool) -> None:
        super().__init__(run_id)
        self.deaths, self.allowed, self.booted = deaths, allowed, booted
        self.steps: list[str] = []

    def say(self, what: str, done: float | None = None, total: float | None = None, /) -> None:
        self.steps.append(f"say {what}")

    def boot(self) -> None:
        self.steps.append("boot")

    def watch(self) -> None:
        self.steps.append("watch")
        if not self.deaths:
            os.kill(os.getpid(), signal.SIGTERM)  # what `sm121 stop` sends
            time.sleep(10)  # the handler raises in here at the latest
        raise self.deaths.pop(0)

    def after_death(self, death: Death) -> bool:
        self.steps.append(f"died {death.during}: {death.how}")
        self.allowed -= 1
        return self.allowed >= 0

    def on_stop(self) -> None:
        self.steps.append("on_stop")

    def cleanup(self) -> None:
        self.steps.append("cleanup")


def _run(run_id: str) -> str:
    create_run_dir(run_id)
    RunInfo(run_id=run_id, recipe="tiny-cpu", profile=None, created="x",
            base_url="http://127.0.0.1:1", model="tiny").save()
    return run_id


def test_a_local_watchdog_boots_first_and_gives_up_at_the_limit(sm121_home: Path) -> None:
    dog = Scripted(_run("core-local"), [Death("exited with status 1", "serving", 1),
                                        Death("killed by signal 9", "serving", -9)],
                   allowed=1, booted=False)
    assert dog.run() == 1
    assert dog.steps == ["boot", "watch", "died serving: exited with status 1",
                         "boot", "watch", "died serving: killed by signal 9", "cleanup"]
    run = load_run("core-local")
    assert run.watchdog_pid == os.getpid() and run.watchdog_start_time is not None


def test_a_cluster_watchdog_watches_first_and_a_stop_ends_it_with_status_0(
        sm121_home: Path) -> None:
    previous = signal.getsignal(signal.SIGTERM)
    stop_on_sigterm()
    try:
        dog = Scripted(_run("core-cluster"), [Death("node b: its engine is gone", "serving")],
                       allowed=5, booted=True)
        assert dog.run() == 0
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert dog.steps == ["watch", "died serving: node b: its engine is gone", "boot", "watch",
                         "on_stop", "say stopping: stop asked for it", "cleanup"]


def test_a_death_is_an_sm121_error_that_names_the_dead() -> None:
    death = Death("gone", "boot", dead=[])
    assert death.message == "gone" and death.exit_code is None and death.dead == []


def test_a_leader_whose_group_is_gone_is_reaped_for_its_status() -> None:
    """The supervised watchdog's poll() can run just before its engine's group dies; the group
    check then finds it gone, and the status is read by reaping the leader (its child), not
    recorded as unknown (a fresh-clone make test once recorded a kill -9 that way)."""
    import os
    import signal
    import subprocess

    from sm121.launch.watchdog import exit_status_of_gone_leader

    child = subprocess.Popen(["sleep", "30"], start_new_session=True)
    os.killpg(child.pid, signal.SIGKILL)
    assert exit_status_of_gone_leader(child) == -signal.SIGKILL
