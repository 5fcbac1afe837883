"""llama-server's boot log: its facts (the KV pool and its size), its phases and milestones,
and the cause of a death.

sm121 starts it with `--log-timestamps --log-prefix`, so each line begins with the time since
the process started (`M.SS.mmm.uuu`, common/log.cpp) and a level letter (`I`, `W`, `E`).
Those stamps give the phases' seconds. They are not wall-clock stamps, which the start-up
waterfall joins to the launcher's clock (it reads vLLM's `MM-DD HH:MM:SS`): the adapter gives
the waterfall no stamped lines yet, and `sm121 startup` shows the launcher's own phases.
Milestones, in the order a start passes them (llama.cpp b11434, CPU build, default verbosity):
the model's load begins, the slots and their context are made, the model is loaded (warm-up
included), and the HTTP server listens.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from sm121.boot_facts import BootFacts, BootPhases, Milestone, StampedLine

_STAMP = re.compile(r"^(\d+)\.(\d{2})\.(\d{3})\.(\d{3}) ([IWED]) ")
_ERROR_LINE = re.compile(r"^(?:[\d.]+ E |error:|terminate called)|\berror: |failed to ",
                         re.IGNORECASE)
# b11434 at its default verbosity: `srv    load_model: initializing, n_slots = 4, n_ctx_slot =
# 16384, kv_unified = 'false'` (the slots and one slot's context), and the CPU buffer sizes.
_SLOTS = re.compile(r"load_model: initializing, n_slots = (\d+), n_ctx_slot = (\d+), "
                    r"kv_unified = '(\w+)'")
_WEIGHTS = re.compile(r"load_tensors:\s+\S+ model buffer size\s*=\s*([\d.]+) MiB")
MIB_PER_GIB = 1024


@dataclass(frozen=True)
class _Rule:
    key: str
    pattern: re.Pattern[str]
    last: bool = False


# The milestone keys are the waterfall's (launch/startup_waterfall.py names the steps).
_RULES = (
    _Rule("load_start", re.compile(r"load_model: loading model")),
    _Rule("kv_pool", re.compile(r"load_model: initializing, n_slots")),
    _Rule("load_end", re.compile(r"llama_server: model loaded")),
    _Rule("api_start", re.compile(r"llama_server: listening on")),
)


def _offset_s(line: str) -> float | None:
    match = _STAMP.match(line)
    if not match:
        return None
    minutes, seconds, ms, us = (int(g) for g in match.groups()[:4])
    return minutes * 60 + seconds + ms / 1e3 + us / 1e6


def stamped_lines(text: str, origin: datetime) -> list[StampedLine]:
    """The stamped lines, each placed at `origin` (the process's start) plus its offset."""
    lines = []
    for number, line in enumerate(text.splitlines()):
        offset = _offset_s(line)
        if offset is not None:
            lines.append(StampedLine(origin + timedelta(seconds=offset), number, "", line))
    return lines


def milestones(lines: list[StampedLine]) -> list[Milestone]:
    found: dict[str, Milestone] = {}
    if lines:
        found["api_first"] = Milestone("api_first", lines[0].stamp, lines[0].line, lines[0].text)
    for rule in _RULES:
        hits = [line for line in lines if rule.pattern.search(line.text)]
        if hits:
            hit = hits[-1] if rule.last else hits[0]
            found[rule.key] = Milestone(rule.key, hit.stamp, hit.line, hit.text)
    return sorted(found.values(), key=lambda m: (m.stamp, m.line))


def parse_boot_log(text: str) -> BootFacts:
    """The slots and the context each gets (`max_concurrency` requests at
    `max_concurrency_at_tokens` each), the pool they make (their sum, or one slot's context
    when kv-unified shares it), the weights' size and their load's seconds."""
    facts = BootFacts()
    if match := _last(_SLOTS, text):
        slots, per_slot, unified = int(match.group(1)), int(match.group(2)), match.group(3)
        facts.max_concurrency = float(slots)
        facts.max_concurrency_at_tokens = per_slot
        facts.kv_pool_tokens = per_slot if unified == "true" else slots * per_slot
    weights = [float(m.group(1)) for m in _WEIGHTS.finditer(text)]
    if weights:
        facts.weights_gib = round(sum(weights) / MIB_PER_GIB, 4)
    facts.weights_load_s = parse_phases(text).weights_s
    return facts


def parse_boot_log_file(path: Path) -> BootFacts:
    try:
        return parse_boot_log(path.read_text(errors="replace"))
    except OSError:
        return BootFacts()


def parse_phases(text: str) -> BootPhases:
    """Weight loading's seconds, from the loader's first line to the tensors loaded; the API
    server's start from the log's first stamped line."""
    stamps = stamped_lines(text, datetime(2000, 1, 1))
    found = {m.key: m.stamp for m in milestones(stamps)}
    phases = BootPhases()
    if "load_start" in found and "load_end" in found:
        phases.weights_s = round((found["load_end"] - found["load_start"]).total_seconds(), 3)
    if "api_first" in found and "api_start" in found:
        phases.api_up_log_s = round((found["api_start"] - found["api_first"]).total_seconds(), 3)
    facts_weights = [float(m.group(1)) for m in _WEIGHTS.finditer(text)]
    if facts_weights:
        phases.weights_gib = round(sum(facts_weights) / MIB_PER_GIB, 4)
    return phases


def has_error_line(text: str) -> bool:
    return any(_ERROR_LINE.search(line) for line in text.splitlines())


def death_cause(text: str, tail: int = 40) -> tuple[str, list[str]]:
    """The last error line of a dead llama-server, and the last lines of its log."""
    lines = [line for line in text.splitlines() if line.strip()]
    last = lines[-tail:]
    errors = [line for line in lines if _ERROR_LINE.search(line)]
    if not errors:
        return (last or ["(the log is empty)"])[-1].strip(), last
    return _STAMP.sub("", errors[-1]).strip(), last


def _last(pattern: re.Pattern[str], text: str) -> re.Match[str] | None:
    matches = list(pattern.finditer(text))
    return matches[-1] if matches else None
