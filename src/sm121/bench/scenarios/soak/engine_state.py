"""What a soak reads from the engine each interval: KV usage, its process start time (a
change means the engine restarted), and its memory. RSS is the run's whole process group
when the run is on this machine (engine core and workers included), else the API server's
own process_resident_memory_bytes from /metrics. On GB10, RSS does not show CUDA/UVM
memory: the host panel's MemAvailable is the number that counts there."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sm121.engines.engine_error import EngineError
from sm121.engines.metrics_snapshot import Snapshot, first_name, scrape
from sm121.engines.registry import metric_names
from sm121.hosts import processes

_PAGE = 4096


@dataclass(frozen=True)
class EngineState:
    """One sample of the engine; None where it does not answer or does not say."""

    engine_up: bool
    kv_usage_pct: float | None
    engine_started: float | None  # its process start time: a change is a restart
    engine_rss_gib: float | None


def group_rss_bytes(pgid: int) -> int:
    total = 0
    for pid in processes.group_members(pgid):
        try:
            pages = int(Path(f"/proc/{pid}/statm").read_text().split()[1])
        except (OSError, IndexError, ValueError):
            continue
        total += pages * _PAGE
    return total


def engine_state(url: str, pgid: int | None) -> EngineState:
    """None values when the engine does not answer (it is down: that is data, not an error)."""
    try:
        snapshot = scrape(url)
    except EngineError:
        return EngineState(engine_up=False, kv_usage_pct=None, engine_started=None,
                           engine_rss_gib=_gib(group_rss_bytes(pgid)) if pgid else None)
    return state_of(snapshot, group_rss_bytes(pgid) if pgid else None)


def state_of(snapshot: Snapshot, group_rss: int | None) -> EngineState:
    """An answering engine's state from its /metrics; `group_rss` when the run is local. KV
    usage by the engines' names, older ones after newer (an older vLLM exported
    gpu_cache_usage_perc), as the monitor reads it."""
    name = first_name(snapshot, *metric_names().kv_usage)
    kv = None if name is None else snapshot.value(name)
    rss = group_rss if group_rss is not None else snapshot.value("process_resident_memory_bytes")
    return EngineState(engine_up=True,
                       kv_usage_pct=None if kv is None else round(100 * kv, 3),
                       engine_started=snapshot.value("process_start_time_seconds"),
                       engine_rss_gib=_gib(rss))


def _gib(value: float | None) -> float | None:
    return None if not value else round(value / 2**30, 3)
