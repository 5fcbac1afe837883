"""A Run on disk: one directory per serve, holding the plan, argv, env (without secrets), the
engine log, pid files and the phase timings. status / logs / stop read only this."""

from __future__ import annotations

import json
import os
import secrets
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from sm121 import paths
from sm121.engines.vllm_log import BootFacts
from sm121.errors import Sm121Error

RunStatus = Literal["starting", "ready", "failed", "stopped"]


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


class Timings(BaseModel):
    """Seconds since the launch began, by the launcher's own monotonic clock."""

    hooks_s: float | None = None
    process_started_s: float | None = None
    port_open_s: float | None = None
    first_generation_s: float | None = None


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

    @property
    def directory(self) -> Path:
        return run_dir(self.run_id)

    def save(self) -> None:
        write_json_atomic(self.directory / "run.json", self.model_dump(mode="json"))


def new_run_id(recipe: str, profile: str | None) -> str:
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    return f"{recipe}-{profile or 'default'}-{stamp}-{secrets.token_hex(2)}"


def run_dir(run_id: str) -> Path:
    return paths.runs_dir() / run_id


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
    tmp = path.with_suffix(path.suffix + f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(data, indent=2, default=str))
    tmp.replace(path)


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def monotonic() -> float:
    return time.monotonic()
