"""What an engine's boot log tells, in terms every engine shares: the facts its start printed
(KV pool, memory, phase durations), its start-up phases, and the stamped milestones the
start-up waterfall orders. An adapter's log readers fill these; launch, memory and the CLI
read them without knowing which engine wrote the log. A base module, not engines/: a run
keeps them (runs/state.RunInfo.boot) and the run record sits below the engines, so both
import these types downward.""" 

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from pydantic import BaseModel


class BootFacts(BaseModel):
    kv_pool_tokens: int | None = None
    max_concurrency: float | None = None
    max_concurrency_at_tokens: int | None = None
    kv_memory_gib: float | None = None
    weights_gib: float | None = None
    weights_load_s: float | None = None
    compile_s: float | None = None
    graph_capture_s: float | None = None
    init_engine_s: float | None = None
    memory_total_gib: float | None = None  # the node's memory as the engine saw it
    startup_free_gib: float | None = None  # set when the start-up memory check refused
    kv_needed_gib: float | None = None  # set when the KV check at max-model-len refused


CompileCache = Literal["hit", "miss", "load-failed"]


class BootPhases(BaseModel):
    weights_s: float | None = None
    weights_gib: float | None = None
    shards: int | None = None
    s_per_shard: float | None = None
    compile_s: float | None = None
    compile_cache: CompileCache | None = None
    graph_capture_s: float | None = None
    init_engine_s: float | None = None
    api_up_log_s: float | None = None  # from the log's first line to the API server's start

    @property
    def start_kind(self) -> Literal["cold", "warm", "unknown"]:
        """Cold: the engine compiled (no cache, or one it could not load); warm: it loaded
        its compile cache."""
        kinds = {"hit": "warm", "miss": "cold", "load-failed": "cold"}
        return kinds.get(self.compile_cache or "", "unknown")  # type: ignore[return-value]


@dataclass(frozen=True)
class Milestone:
    key: str
    stamp: datetime  # naive: the engine host's local wall clock, whole seconds
    line: int  # 0-based line number in the log, to order lines of one second
    text: str


@dataclass(frozen=True)
class StampedLine:
    stamp: datetime
    line: int
    process: str
    text: str
