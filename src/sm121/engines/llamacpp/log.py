"""llama-server's boot log: its facts (the KV pool and its size), its phases and milestones,
and the cause of a death.

sm121 starts it with `--log-timestamps --log-prefix`, so each line begins with the time since
the process started (`M.SS.mmm.uuu`, common/log.cpp) and a level letter (`I`, `W`, `E`).
Those stamps give the phases' seconds. They are not wall-clock stamps, which the start-up
waterfall joins to the launcher's clock (it reads vLLM's `MM-DD HH:MM:SS`): the adapter gives
the waterfall no stamped lines yet, and `sm121 startup` shows the launcher's own phases.
Milestones, in the order a start passes them (llama.cpp b11434, CPU build): the model loader's
first line, the tensors loaded, the context and its KV cache, the warm-up's empty run, and the
HTTP server listening.
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
_N_CTX = re.compile(r"llama_context: n_ctx\s*=\s*(\d+)")
_N_CTX_SEQ = re.compile(r"llama_context: n_ctx_seq\s*=\s*(\d+)")
_N_SEQ = re.compile(r"llama_context: n_seq_max\s*=\s*(\d+)")
_KV_SIZE = re.compile(r"llama_kv_cache: size\s*=\s*([\d.]+) MiB")
_WEIGHTS = re.compile(r"load_tensors:\s+\S+ model buffer size\s*=\s*([\d.]+) MiB")
MIB_PER_GIB = 1024


@dataclass(frozen=True)
class _Rule:
    key: str
    pattern: re.Pattern[str]
    last: bool = False


# The milestone keys are the waterfall's (launch/startup_waterfall.py names the steps).
_RULES = (
    _Rule("load_start", re.compile(r"llama_model_loader: loaded meta data|srv\s+load_model: "
                                   r"loading model")),
    _Rule("load_end", re.compile(r"load_tensors: .*buffer size"), last=True),
    _Rule("kv_pool", re.compile(r"llama_kv_cache: size")),
    _Rule("warmup_start", re.compile(r"warming up the model")),
    _Rule("warmup_done", re.compile(r"srv\s+init: initializing slots|initializing slots")),
    _Rule("api_start", re.compile(r"server is listening on")),
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
    """The KV pool in tokens (the context llama.cpp built: `n_ctx`, all slots together) and its
    size, and the weights' size."""
    facts = BootFacts()
    if match := _last(_N_CTX, text):
        facts.kv_pool_tokens = int(match.group(1))
    seqs, per_seq = _last(_N_SEQ, text), _last(_N_CTX_SEQ, text)
    if seqs and per_seq and facts.kv_pool_tokens:
        facts.max_concurrency = float(seqs.group(1))
        facts.max_concurrency_at_tokens = int(per_seq.group(1))
    if match := _last(_KV_SIZE, text):
        facts.kv_memory_gib = round(float(match.group(1)) / MIB_PER_GIB, 4)
    weights = [float(m.group(1)) for m in _WEIGHTS.finditer(text)]
    if weights:
        facts.weights_gib = round(sum(weights) / MIB_PER_GIB, 4)
    phases = parse_phases(text)
    facts.weights_load_s = phases.weights_s
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
