"""status / logs / stop for runs, whatever node they are on."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

from sm121.errors import Sm121Error
from sm121.hosts import processes
from sm121.runs.state import NodeProcess, RunInfo, list_runs, load_run, through_transport, update_run


def node_alive(node: NodeProcess) -> bool:
    if through_transport(node):
        from sm121.launch import remote  # the SSH side, kept apart from local processes

        return remote.node_alive(node)
    return node.pgid is not None and processes.group_alive_as(node.pgid, node.identity)


def node_state(node: NodeProcess) -> str:
    """"alive", "gone", or (for a node reached over ssh) "unreachable": ssh itself failed,
    which says nothing about the engine (remote.node_state)."""
    if through_transport(node):
        from sm121.launch import remote

        return remote.node_state(node)
    return "alive" if node_alive(node) else "gone"


def run_alive(run: RunInfo) -> bool:
    return any(node_alive(node) for node in run.nodes)


def watchdog_alive(run: RunInfo) -> bool:
    return run.watchdog_pid is not None and processes.group_alive(run.watchdog_pid)


def effective_status(run: RunInfo) -> str:
    """The stored status, corrected by what is really running. A supervised engine that is
    down while its watchdog lives is restarting (the watchdog may not have noticed yet)."""
    if run.status in ("ready", "starting", "restarting") and watchdog_alive(run):
        return run.status if run_alive(run) else "restarting"
    if run.status in ("ready", "starting", "restarting") and not run_alive(run):
        return "exited"
    return run.status


def stop_run(run: RunInfo) -> list[str]:
    """Stop every node of a run; returns the names of nodes that would not stop. The
    watchdog of a supervised run goes first, so nothing restarts what is being stopped. A run
    already stopped is not signalled again: its ids may belong to other processes by now."""
    if run.status == "stopped":
        return []
    stubborn = []
    if run.watchdog_pid is not None:
        watchdog = processes.Identity(run.watchdog_boot_id, run.watchdog_start_time)
        if not processes.stop_group(run.watchdog_pid, watchdog):
            stubborn.append("watchdog")
        run = load_run(run.run_id)  # the engine's process group as the watchdog left it
    stubborn += stop_nodes(run)
    run.status = "stopped"
    update_run(run.run_id, lambda fresh: setattr(fresh, "status", "stopped"))
    return stubborn


def stop_nodes(run: RunInfo, names: set[str] | None = None) -> list[str]:
    """Stop the run's processes (only those named, when `names` is given), workers first and
    the head last; returns the names that would not stop. Status is left to the caller."""
    stubborn = []
    for node in reversed(run.nodes):
        if names is not None and node.name not in names:
            continue
        if through_transport(node):
            from sm121.launch import remote

            if not remote.stop_node(node):
                stubborn.append(node.name)
        elif node.pgid is not None and not processes.stop_group(node.pgid, node.identity):
            stubborn.append(node.name)
    return stubborn


def active_runs() -> list[RunInfo]:
    return [r for r in list_runs()
            if effective_status(r) in ("ready", "starting", "restarting")]


def resolve_run(run_id: str) -> RunInfo:
    """A run by id or unique prefix."""
    runs = list_runs()
    exact = [r for r in runs if r.run_id == run_id]
    matches = exact or [r for r in runs if r.run_id.startswith(run_id)]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        return load_run(run_id)  # raises with the list of known runs
    raise Sm121Error(f"{run_id!r} matches {len(matches)} runs",
                     "give more of the run id: " + ", ".join(r.run_id for r in matches))


def log_path(run: RunInfo, node_name: str | None) -> Path:
    nodes = [n for n in run.nodes if node_name in (None, n.name)]
    if not nodes:
        raise Sm121Error(f"run {run.run_id} has no node {node_name!r}",
                         f"nodes: {', '.join(n.name for n in run.nodes)}")
    node = nodes[0]
    if through_transport(node):
        from sm121.launch import remote

        return remote.fetch_log(run, node)
    return Path(node.log)


def follow(path: Path, still_running: Callable[[], bool]) -> Iterator[str]:
    """Yield new log text as it is written, until the engine is gone."""
    with open(path, errors="replace") as handle:
        yield from _tail(handle.read, still_running)


def follow_bytes(path: Path, still_running: Callable[[], bool]) -> Iterator[bytes]:
    """`follow`, the bytes as the engine wrote them (`sm121 logs --raw --follow`)."""
    with open(path, "rb") as handle:
        yield from _tail(handle.read, still_running)


Chunk = TypeVar("Chunk", str, bytes)


def _tail(read: Callable[[], Chunk], still_running: Callable[[], bool]) -> Iterator[Chunk]:
    while True:
        chunk = read()
        if chunk:
            yield chunk
        elif not still_running():
            return
        else:
            time.sleep(0.5)
