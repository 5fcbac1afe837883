"""serve(plan, mode): one start of a plan, the way `sm121 serve` starts it, returned once the
engine generated. The mode says where and how: this machine or the plan's nodes over SSH,
plain or under a watchdog that restarts it."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from typing import Literal

from sm121.launch import control
from sm121.plan.model import ServePlan
from sm121.progress import Progress, quiet
from sm121.recipes.schema import RestartPolicy
from sm121.runs.state import RunInfo, load_run

Mode = Literal["local", "cluster", "supervised", "cluster-supervised"]
MODES: tuple[Mode, ...] = ("local", "cluster", "supervised", "cluster-supervised")


def mode_for(plan: ServePlan, cluster: bool) -> Mode:
    """`cluster`: the plan was rendered from a cluster file (its nodes are reached over SSH,
    even a single one). Supervised when the plan carries a restart policy other than never
    (a recipe's `restart:`, or `supervise(plan)`)."""
    supervised = plan.restart is not None and plan.restart.policy != "never"
    if cluster:
        return "cluster-supervised" if supervised else "cluster"
    return "supervised" if supervised else "local"


def supervise(plan: ServePlan) -> ServePlan:
    """The plan under a watchdog: its recipe's restart policy, or the default one."""
    return plan.model_copy(update={"restart": plan.restart or RestartPolicy()})


@dataclass(frozen=True)
class ServedRun:
    """A run this process started and saw generate. `process` is the engine itself when this
    process spawned it (local mode), for a caller that stays attached; a supervised engine is
    the watchdog's child, a cluster's lives on its nodes."""

    info: RunInfo  # as it was when it became ready
    mode: Mode
    process: subprocess.Popen[bytes] | None = None

    @property
    def run_id(self) -> str:
        return self.info.run_id

    @property
    def supervised(self) -> bool:
        return self.mode in ("supervised", "cluster-supervised")

    def stop(self) -> list[str]:
        """Stop all the run holds now (its watchdog first, every node, a gateway started in
        front of it), as saved on disk, not as this copy last saw it; the names that would
        not stop."""
        stubborn = control.stop_run(load_run(self.run_id))
        if self.process is not None:
            self.process.wait(timeout=60)
        return stubborn


def serve(plan: ServePlan, mode: Mode, progress: Progress = quiet,
          trust: bool = False) -> ServedRun:
    """Start `plan` and return once it generated; on failure nothing it started is left
    running (each launcher rolls back). The engine keeps running: `ServedRun.stop`, or
    `sm121 stop RUN`, stops it."""
    if mode == "local":
        from sm121.launch.local import serve_local

        run, process = serve_local(plan, progress=progress, trust=trust)
        return ServedRun(run, mode, process)
    if mode == "cluster":
        from sm121.launch.cluster_serve import serve_cluster  # SSH: only for a cluster

        return ServedRun(serve_cluster(plan, progress=progress, trust=trust), mode)
    from sm121.launch import supervised

    start = supervised.serve_cluster_supervised if mode == "cluster-supervised" \
        else supervised.serve_supervised
    return ServedRun(start(supervise(plan), progress=progress, trust=trust), mode)
