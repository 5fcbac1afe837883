"""A Run on disk: one directory per serve, holding the plan, argv, env (without secrets), the
engine log, pid files and the phase timings. status / logs / stop read only this.

This module is the one owner of the directory's layout: local and cluster runs write their
launch files through `save_launch` in one shape (per node name), and readers (calibration,
the memory check) read them back through `load_plan` and `head_env`. A floor below plan/ and
recipes/: it keeps their data as JSON and never imports them."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from sm121 import paths
from sm121.boot_facts import BootFacts
from sm121.errors import Sm121Error
from sm121.hosts.processes import Identity
from sm121.names import NAME_PATTERN
from sm121.runs.lock import locked

RunStatus = Literal["starting", "ready", "restarting", "failed", "stopped"]
# The node of a run that is the gateway in front of its engine (`serve --gateway`); every
# other node is an engine.
GATEWAY_NODE = "gateway"


class NodeProcess(BaseModel):
    name: str
    ssh: str | None = None  # None: this machine
    pid: int | None = None
    pgid: int | None = None
    log: str  # path of the engine log (on the node)
    pid_file: str
    container: str | None = None
    # How to reach a node over ssh (set for cluster runs).
    ssh_port: int | None = None
    ssh_config: str | None = None
    role: str = "head"
    # What tells this engine from a later process or container that reuses its pid or name:
    # stop and status act only while they still match.
    boot_id: str | None = None
    start_time: str | None = None  # the group leader's, from /proc/PID/stat
    container_id: str | None = None

    @property
    def identity(self) -> Identity:
        return Identity(boot_id=self.boot_id, start_time=self.start_time)


def through_transport(node: NodeProcess) -> bool:
    """Nodes over ssh, and containers anywhere, are reached by commands, not local pids."""
    return node.ssh is not None or node.container is not None


class Timings(BaseModel):
    """Seconds since the launch began, by the launcher's own monotonic clock, and the wall-clock
    moment it began (UTC, microseconds): what joins the engine log's stamps to this clock."""

    started_at: str | None = None
    hooks_s: float | None = None
    process_started_s: float | None = None
    port_open_s: float | None = None
    first_generation_s: float | None = None


class Crash(BaseModel):
    """One death of a supervised engine, as its watchdog saw it."""

    at: str  # UTC, ISO 8601
    incarnation: int  # 0: the first start, 1: after the first restart, ...
    during: Literal["boot", "serving"]
    how: str  # "exited with status 1", "killed by signal 9", "/health failed 3 times"
    exit_code: int | None = None  # negative: the signal that killed it
    cause: str = ""  # the engine log's most telling line
    excerpt: list[str] = []  # the last lines of the engine log
    restarted: bool = False  # False: the restart limit was reached, the run failed


class RunInfo(BaseModel):
    run_id: str
    recipe: str
    profile: str | None
    created: str
    base_url: str
    model: str
    status: RunStatus = "starting"
    nodes: list[NodeProcess] = []
    timings: Timings = Timings()
    boot: BootFacts = BootFacts()
    failure: str | None = None
    # Supervision (serve --supervise, or `restart:` in the recipe): the watchdog's pid (its
    # own process group), how many restarts it made, and every crash it saw.
    watchdog_pid: int | None = None
    # The watchdog's own identity, so `stop` signals it only while it is still that process.
    watchdog_boot_id: str | None = None
    watchdog_start_time: str | None = None
    gateway_url: str | None = None  # `serve --gateway`: the gateway in front of the engine
    restarts: int = 0
    crashes: list[Crash] = []

    @property
    def directory(self) -> Path:
        return run_dir(self.run_id)

    def save(self) -> None:
        # The threads of one cluster start group save the same run at once.
        with _save_lock:
            write_json_atomic(self.directory / "run.json", self.model_dump(mode="json"))


_save_lock = threading.Lock()


PLAN_FILE, ARGV_FILE, ENV_FILE = "plan.json", "argv.json", "env.json"


def save_launch(folder: Path, plan: BaseModel, argv: Mapping[str, list[str]]) -> None:
    """What a run was started with, per node name: the plan (a ServePlan: read here as the
    JSON it is saved as, so this floor stays below plan/), each node's argv as it runs, and
    each node's env (secrets by name only: their values never reach the disk)."""
    data = plan.model_dump(mode="json")
    write_json_atomic(folder / PLAN_FILE, data)
    write_json_atomic(folder / ARGV_FILE, dict(argv))
    write_json_atomic(folder / ENV_FILE, {n["name"]: {"set": n["env"],
                                                      "passed_through": n["pass_env"]}
                                          for n in data["nodes"]})


def load_plan(folder: Path) -> dict[str, Any]:
    """The plan a run was started with (as JSON data: it may come from an older sm121)."""
    file = folder / PLAN_FILE
    if not file.is_file():
        raise Sm121Error(f"{folder} is not a run directory (no {PLAN_FILE})",
                         "see `sm121 status` for runs")
    data: dict[str, Any] = json.loads(file.read_text())
    return data


def head_env(folder: Path) -> dict[str, str]:
    """The env the head node's engine was started with (without secrets)."""
    file = folder / ENV_FILE
    if file.is_file():
        data = json.loads(file.read_text())
        if "set" in data:  # a local run written before the per-node shape
            return dict(data["set"])
        if data:
            return dict(next(iter(data.values()))["set"])
    nodes = load_plan(folder).get("nodes") or [{}]
    return dict(nodes[0].get("env") or {})


def new_run_id(recipe: str, profile: str | None) -> str:
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    return f"{recipe}-{profile or 'default'}-{stamp}-{secrets.token_hex(2)}"


def run_dir(run_id: str) -> Path:
    """The run's folder, checked to be a direct child of $SM121_HOME/runs once resolved (a run
    id or a link in there must not lead elsewhere)."""
    root = paths.runs_dir().resolve()
    folder = (root / run_id).resolve()
    if not NAME_PATTERN.fullmatch(run_id) or folder.parent != root:
        raise Sm121Error(f"run id {run_id!r} does not name a folder in {root}",
                         "see `sm121 status` for run ids")
    return folder


def create_run_dir(run_id: str) -> Path:
    folder = run_dir(run_id)
    folder.mkdir(parents=True, exist_ok=False)
    os.chmod(folder, 0o700)
    return folder


def load_run(run_id: str) -> RunInfo:
    file = run_dir(run_id) / "run.json"
    if not file.is_file():
        known = [r.run_id for r in list_runs()]
        raise Sm121Error(f"no run {run_id!r}",
                         f"runs: {', '.join(known[-5:]) or '(none)'}; see `sm121 status`")
    return RunInfo.model_validate_json(file.read_text())


def update_run(run_id: str, change: Callable[[RunInfo], None]) -> RunInfo:
    """Read run.json, change it, save it, under the run's lock: serve's gateway launcher, the
    watchdog and `stop` each write the same file, and a plain load-then-save by one of them
    would drop what another saved in between (an engine's new pid, a gateway to stop)."""
    with locked(run_dir(run_id) / "run.json"):
        run = load_run(run_id)
        change(run)
        run.save()
    return run


def list_runs() -> list[RunInfo]:
    folder = paths.runs_dir()
    if not folder.is_dir():
        return []
    runs = []
    for file in sorted(folder.glob("*/run.json")):
        try:
            runs.append(RunInfo.model_validate_json(file.read_text()))
        except ValueError:
            continue  # a run directory from an interrupted write: skip, never crash status
    return sorted(runs, key=lambda r: r.created)


def write_json_atomic(path: Path, data: object) -> None:
    """Write to a temporary file of its own (unique per call, so concurrent writers never
    rename each other's), then rename it over path: a reader sees the old or the new file."""
    text = json.dumps(data, indent=2, default=str)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        os.chmod(tmp, 0o644)  # what write_text gives under the usual umask
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def monotonic() -> float:
    return time.monotonic()


def wall_clock_now() -> str:
    """The launch's wall-clock beginning, taken beside its monotonic start."""
    return datetime.now(UTC).isoformat(timespec="microseconds")
