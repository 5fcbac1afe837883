"""The moments a vLLM start passes, read from the engine log's own timestamps.

vLLM stamps each log line `MM-DD HH:MM:SS`: the engine host's local wall clock, whole seconds
(truncated), no year and no time zone. A milestone is the first (or last, where that is the
honest end) line that marks a step of the start: the API server's first line, the engine core's
first line, weight loading, compile, the profiling run, the KV pool, graph capture, the API
server's start. The GPU build (0.21) and the CPU build (0.32) pass them in different orders;
the waterfall (launch/startup_waterfall.py) names the time between each pair it knows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from sm121.boot_facts import Milestone, StampedLine

_STAMP = re.compile(r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) (\d\d-\d\d \d\d:\d\d:\d\d)")
_PROCESS = re.compile(r"^\((\w[\w-]*) pid=\d+\)")
API_PROCESS = "APIServer"


@dataclass(frozen=True)
class _Rule:
    key: str
    pattern: re.Pattern[str]
    last: bool = False  # the last matching line marks the end (several lines say it)


# Order here is only the order rules are tried; the log's own order decides the waterfall.
_RULES = (
    _Rule("engine_core_first", re.compile(r"Initializing a V1 LLM engine")),
    _Rule("load_start", re.compile(r"Starting to load model")),
    _Rule("load_end", re.compile(r"Model loading took|Loading weights took"), last=True),
    _Rule("warmup_start", re.compile(r"Warming up model for the compilation")),
    _Rule("compile_end", re.compile(r"torch\.compile took? [\d.]+ s in total|torch\.compile "
                                    r"takes [\d.]+ s in total")),
    _Rule("compile_step", re.compile(r"saved AOT compiled function|Directly load AOT compilation"
                                     r"|Directly load the compiled graph|Compiling a graph for"),
          last=True),
    _Rule("first_forward_end", re.compile(r"Initial profiling/warmup run took")),
    _Rule("warmup_done", re.compile(r"Warming up done\.")),
    _Rule("cudagraph_profile_start", re.compile(r"Profiling CUDA graph memory")),
    _Rule("kv_budget", re.compile(r"Available KV cache memory|(?:Explicitly|Auto) set \([\d.]+/"
                                  r"[\d.]+\) GiB for KV cache")),
    _Rule("kv_pool", re.compile(r"KV cache size: [\d,]+ tokens")),
    _Rule("capture_end", re.compile(r"Graph capturing finished in")),
    _Rule("engine_ready", re.compile(r"init engine \(profile, create kv cache, warmup model\) took")),
    _Rule("api_start", re.compile(r"Starting vLLM (?:API )?server on")),
)


def stamped_lines(text: str, year: int) -> list[StampedLine]:
    """The lines that carry vLLM's stamp. `year` fills the stamp's missing year (the launcher's
    own date); a start that crosses New Year is placed in the year that keeps it in order."""
    lines = []
    for number, line in enumerate(text.splitlines()):
        if not (match := _STAMP.search(line)):
            continue
        process = m.group(1) if (m := _PROCESS.match(line)) else ""
        lines.append(StampedLine(_parse(match.group(1), year), number, process, line))
    return _fix_new_year(lines)


def milestones(lines: list[StampedLine]) -> list[Milestone]:
    """The milestones found, in the log's order."""
    found: dict[str, Milestone] = {}
    if lines:
        found["api_first"] = _milestone("api_first", lines[0])
    engine = [i for i, line in enumerate(lines) if line.process and line.process != API_PROCESS]
    if engine:
        first = engine[0]
        found["engine_core_first"] = _milestone("engine_core_first", lines[first])
        # Config is done when the API server hands over: its last line before the engine's.
        api_before = [line for line in lines[:first] if line.process in (API_PROCESS, "")]
        if api_before and api_before[-1] is not lines[0]:
            found["config_done"] = _milestone("config_done", api_before[-1])
    for rule in _RULES:
        hits = [line for line in lines if rule.pattern.search(line.text)]
        if hits and (rule.key != "engine_core_first" or "engine_core_first" not in found):
            found[rule.key] = _milestone(rule.key, hits[-1] if rule.last else hits[0])
    if "compile_end" in found:
        found.pop("compile_step", None)  # the engine's own total closes compile
    return sorted(found.values(), key=lambda m: (m.stamp, m.line))


def _milestone(key: str, line: StampedLine) -> Milestone:
    return Milestone(key, line.stamp, line.line, line.text)


def _parse(stamp: str, year: int) -> datetime:
    # A leap year placeholder accepts 02-29; the real year is set after.
    parsed = datetime.strptime(f"2000-{stamp}", "%Y-%m-%d %H:%M:%S")
    try:
        return parsed.replace(year=year)
    except ValueError:  # 02-29 in a year that has none: the stamp's year is a leap year
        return parsed.replace(year=year - year % 4)


def _fix_new_year(lines: list[StampedLine]) -> list[StampedLine]:
    """A line stamped 01-01 after one stamped 12-31 belongs to the next year."""
    fixed, shift = [], 0
    for previous, line in zip([None, *lines], lines, strict=False):
        if previous is not None and line.stamp.month < previous.stamp.month - 6:
            shift += 1
        stamp = line.stamp.replace(year=line.stamp.year + shift) if shift else line.stamp
        fixed.append(StampedLine(stamp, line.line, line.process, line.text))
    return fixed
