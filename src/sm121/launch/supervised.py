"""`sm121 serve --supervise` (or a recipe's `restart:`).

On this machine: prepare the run as serve does, then hand the engine to a watchdog process
and wait until it reports the first generation. The watchdog starts the engine itself, so it
sees every exit status. On a cluster: serve the run as `serve --cluster` does (its rollback
included), then hand it to a cluster watchdog that watches every node and rolls the whole run
over when one dies."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from sm121.errors import Sm121Error
from sm121.hosts import processes
from sm121.hosts.python import python_module
from sm121.launch import control
from sm121.launch.local import local_hooks, new_run, preflight, single_native_node
from sm121.plan.model import ServePlan
from sm121.progress import Progress, quiet
from sm121.runs.state import RunInfo, load_run, monotonic

WATCHDOG_LOG = "watchdog.log"


def serve_supervised(plan: ServePlan, progress: Progress = quiet,
                     trust: bool = False) -> RunInfo:
    node = single_native_node(plan)
    preflight(plan, progress, trust)
    run = new_run(plan, node)
    started = monotonic()
    local_hooks(plan, run, "before_serve", progress)
    run.timings.hooks_s = round(monotonic() - started, 2)
    run.save()
    log = run.directory / WATCHDOG_LOG
    watchdog = processes.spawn(python_module("sm121.launch.watchdog", run.run_id),
                               os.environ, log)
    (run.directory / "watchdog.pid").write_text(f"{watchdog.pid}\n")
    progress(f"run {run.run_id}: supervised (watchdog pid {watchdog.pid}); starting ...")
    try:
        return _wait_first_ready(run.run_id, watchdog.poll, log, progress)
    except KeyboardInterrupt:
        control.stop_run(load_run(run.run_id))
        raise


def serve_cluster_supervised(plan: ServePlan, progress: Progress = quiet,
                             trust: bool = False) -> RunInfo:
    from sm121.launch.cluster_serve import serve_cluster

    run = serve_cluster(plan, progress=progress, trust=trust)
    log = run.directory / WATCHDOG_LOG
    watchdog = processes.spawn(python_module("sm121.launch.cluster_watchdog", run.run_id),
                               os.environ, log)
    started = processes.identity(watchdog.pid)
    (run.directory / "watchdog.pid").write_text(f"{watchdog.pid}\n")
    try:
        return _wait_recorded(run.run_id, watchdog.poll, log)
    except BaseException:
        processes.stop_group(watchdog.pid, started)  # before it records itself, too
        control.stop_run(load_run(run.run_id))  # no unwatched run is left behind
        raise


def _wait_recorded(run_id: str, watchdog_exit: Callable[[], int | None], log_path: Path,
                   timeout_s: float = 60) -> RunInfo:
    """Until the watchdog has written itself into the run (what `stop` signals first)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        run = load_run(run_id)
        if run.watchdog_pid is not None:
            return run
        if watchdog_exit() is not None:
            break
        time.sleep(0.2)
    tail = log_path.read_text(errors="replace").splitlines()[-10:] if log_path.exists() else []
    raise Sm121Error("the cluster watchdog did not start:\n    " + "\n    ".join(tail),
                     f"see {log_path}; the run was stopped")


def _wait_first_ready(run_id: str, watchdog_exit: Callable[[], int | None], log_path,  # type: ignore[no-untyped-def]
                      progress: Progress) -> RunInfo:
    """Relay the watchdog's lines until the run is ready, failed, or the watchdog is gone."""
    shown = 0
    while True:
        lines = log_path.read_text(errors="replace").splitlines() if log_path.exists() else []
        for line in lines[shown:]:
            progress(f"  watchdog: {line}")
        shown = len(lines)
        run = load_run(run_id)
        if run.status == "ready":
            return run
        if run.status == "failed":
            last = run.crashes[-1] if run.crashes else None
            raise Sm121Error(
                f"the supervised engine never stayed up: {run.failure}"
                + ("\n  last log lines:\n    " + "\n    ".join(last.excerpt[-15:]) if last else ""),
                f"every crash: sm121 logs {run_id} --crash")
        if watchdog_exit() is not None:
            control.stop_run(run)
            raise Sm121Error("the watchdog exited before the engine was ready:\n    "
                             + "\n    ".join(lines[-10:]), f"see {log_path}")
        time.sleep(0.5)
