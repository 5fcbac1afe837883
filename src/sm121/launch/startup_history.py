"""Start-up timing per node, per run, and the history of them: the launcher's own clock
(hooks, process start, API up, first generation) plus the phases the engine logs (weights with
the per-shard rate, compile, graph capture). Compare the same phase between runs, cold against
warm; never an instantaneous ETA."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from sm121 import paths
from sm121.boot_facts import BootPhases
from sm121.engines.adapter import EngineAdapter
from sm121.engines.registry import adapter_of
from sm121.errors import Sm121Error
from sm121.launch.startup_waterfall import Waterfall, build_waterfall, launcher_clock
from sm121.runs.state import RunInfo, load_plan, load_run, write_json_atomic

HISTORY_NAME = "startup-history.jsonl"
StartKind = Literal["cold", "warm", "unknown"]


class NodeStartup(BaseModel):
    name: str
    role: str
    hooks_s: float | None = None  # before_serve hooks on this node (launcher clock)
    process_started_s: float | None = None  # since the launch began (launcher clock)
    phases: BootPhases = BootPhases()


class StartupRecord(BaseModel):
    run_id: str
    recipe: str
    profile: str | None
    created: str
    start: StartKind = "unknown"
    hooks_s: float | None = None
    process_started_s: float | None = None
    api_up_s: float | None = None
    first_generation_s: float | None = None
    nodes: list[NodeStartup] = []
    hooks: list[str] = []  # one line per hook run, with its outcome
    waterfall: Waterfall | None = None  # the head node's log joined to the launcher's clock
    restart: int = 0  # a supervised run's restart this start-up was (0: its first start)


def node_startup(name: str, role: str, log_text: str, hooks_s: float | None,
                 process_started_s: float | None, engine: EngineAdapter) -> NodeStartup:
    return NodeStartup(name=name, role=role, hooks_s=hooks_s,
                       process_started_s=process_started_s, phases=engine.parse_phases(log_text))


def build_record(run: RunInfo, nodes: list[NodeStartup], hook_lines: list[str],
                 engine: EngineAdapter, head_log: str = "") -> StartupRecord:
    t = run.timings
    kinds = {n.phases.start_kind for n in nodes} - {"unknown"}
    # One cold node makes the start cold: the slowest node gates readiness.
    start: StartKind = "cold" if "cold" in kinds else "warm" if kinds else "unknown"
    return StartupRecord(
        run_id=run.run_id, recipe=run.recipe, profile=run.profile, created=run.created,
        start=start, hooks_s=t.hooks_s, process_started_s=t.process_started_s,
        api_up_s=t.port_open_s, first_generation_s=t.first_generation_s, nodes=nodes,
        hooks=hook_lines, waterfall=head_waterfall(run, nodes, head_log, engine),
    )


def head_waterfall(run: RunInfo, nodes: list[NodeStartup], head_log: str,
                   engine: EngineAdapter) -> Waterfall | None:
    if not head_log:
        return None
    head = next((n for n in nodes if n.role == "head"), nodes[0] if nodes else None)
    return build_waterfall(head_log, launcher_clock(run.created, run.timings),
                           head.phases if head else None, engine=engine)


def waterfall_of(entry: StartupRecord) -> Waterfall | None:
    """The record's waterfall; for a record written before waterfalls, rebuilt from its run
    directory's engine log when that is still there."""
    if entry.waterfall is not None:
        return entry.waterfall
    try:
        run = load_run(entry.run_id)
    except Sm121Error:  # the run directory is gone: nothing to rebuild from
        return None
    log = run.directory / "engine.log"
    if not log.is_file():
        return None
    # Where a run's kept plan meets its engine again: the record predates waterfalls.
    engine = adapter_of(load_plan(run.directory).get("engine"))
    return head_waterfall(run, entry.nodes, log.read_text(errors="replace"), engine)


def record(run: RunInfo, startup: StartupRecord) -> None:
    """Keep the record in the run directory and append it to the history."""
    write_json_atomic(run.directory / "startup.json", startup.model_dump(mode="json"))
    with open(history_path(), "a") as history:
        history.write(startup.model_dump_json() + "\n")


def history_path() -> Path:
    path = paths.home() / HISTORY_NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def load_history(recipe: str | None = None, last: int = 5) -> list[StartupRecord]:
    path = history_path()
    if not path.is_file():
        return []
    records = []
    for line in path.read_text().splitlines():
        try:
            entry = StartupRecord.model_validate(json.loads(line))
        except ValueError:
            continue  # a line from an interrupted write
        if recipe in (None, entry.recipe):
            records.append(entry)
    return records[-last:] if last > 0 else records
