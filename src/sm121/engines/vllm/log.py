"""Read facts out of a vLLM boot log: the KV pool, max concurrency, memory and phase times,
and the cause when the engine died."""

from __future__ import annotations

import re
from pathlib import Path

from sm121.boot_facts import BootFacts

_KV_TOKENS = re.compile(r"(?:GPU|CPU|XPU|TPU)? ?KV cache size: ([\d,]+) tokens")
_CONCURRENCY = re.compile(r"Maximum concurrency for ([\d,]+) tokens per request: ([\d.]+)x")
_KV_MEMORY = re.compile(r"Available KV cache memory: ([\d.]+) GiB")
_WEIGHTS = re.compile(r"Model loading took ([\d.]+) GiB(?: memory)? and ([\d.]+) s")
_LOAD_WEIGHTS = re.compile(r"Loading weights took ([\d.]+) s(?:econds)?")
_COMPILE = re.compile(r"torch\.compile (?:takes?|took) ([\d.]+) s")
_CAPTURE = re.compile(r"Graph capturing finished in ([\d.]+) secs")
_INIT_ENGINE = re.compile(
    r"init engine \(profile, create kv cache, warmup model\) took ([\d.]+) s(?:econds)?")
# The CPU build: "Explicitly set (2.0/23.47) GiB for KV cache" or "Auto set (...)".
_CPU_KV = re.compile(r"(?:Explicitly|Auto) set \(([\d.]+)/([\d.]+)\) GiB for KV cache")
# The memory refusals: the start-up check, and the KV check at max-model-len.
_START_REFUSED = re.compile(r"Free memory on device \S+ \(([\d.]+)/([\d.]+) GiB\) on startup "
                            r"is less than desired GPU memory utilization \(([\d.]+), ([\d.]+) GiB\)")
_KV_REFUSED = re.compile(r"max seq len \((\d+)\), \(([\d.]+) GiB KV cache is needed, which is "
                         r"larger than the available KV cache memory \(([\d.]+) GiB\)")
_ERROR_LINE = re.compile(r"(Error|Exception|error:|FATAL|Traceback|exceeds|refus|not enough)", re.I)
_NOISE = re.compile(r"Triton is installed|DeprecationWarning|FutureWarning")
# Wrappers that only point elsewhere ("See root cause above"): never the cause itself.
_WRAPPER = re.compile(r"See root cause above|Engine core initialization failed|Process \S+ died")


def parse_boot_log(text: str) -> BootFacts:
    facts = BootFacts()
    if m := _last(_KV_TOKENS, text):
        facts.kv_pool_tokens = _int(m.group(1))
    if m := _last(_CONCURRENCY, text):
        facts.max_concurrency_at_tokens = _int(m.group(1))
        facts.max_concurrency = float(m.group(2))
    if m := _last(_KV_MEMORY, text):
        facts.kv_memory_gib = float(m.group(1))
    if m := _last(_WEIGHTS, text):
        facts.weights_gib, facts.weights_load_s = float(m.group(1)), float(m.group(2))
    elif m := _last(_LOAD_WEIGHTS, text):
        facts.weights_load_s = float(m.group(1))
    if m := _last(_COMPILE, text):
        facts.compile_s = float(m.group(1))
    if m := _last(_CAPTURE, text):
        facts.graph_capture_s = float(m.group(1))
    if m := _last(_INIT_ENGINE, text):
        facts.init_engine_s = float(m.group(1))
    _parse_memory_lines(facts, text)
    return facts


def _parse_memory_lines(facts: BootFacts, text: str) -> None:
    if m := _last(_CPU_KV, text):
        facts.kv_memory_gib, facts.memory_total_gib = float(m.group(1)), float(m.group(2))
    if m := _last(_START_REFUSED, text):
        facts.startup_free_gib, facts.memory_total_gib = float(m.group(1)), float(m.group(2))
    if m := _last(_KV_REFUSED, text):
        facts.kv_needed_gib, facts.kv_memory_gib = float(m.group(2)), float(m.group(3))


def parse_boot_log_file(path: Path) -> BootFacts:
    return parse_boot_log(path.read_text(errors="replace")) if path.is_file() else BootFacts()


def has_error_line(text: str) -> bool:
    """Whether any line of the log says something went wrong (a kill -9 leaves none)."""
    return any(_ERROR_LINE.search(line) and not _NOISE.search(line)
               for line in text.splitlines())


def death_cause(text: str, tail: int = 40) -> tuple[str, list[str]]:
    """The most telling error line of a dead engine, and the last lines of its log."""
    lines = [line for line in text.splitlines() if line.strip() and not _NOISE.search(line)]
    last = lines[-tail:]
    errors = [i for i, line in enumerate(lines) if _ERROR_LINE.search(line)]
    # The final exception line ("ValueError: ...") says more than "Traceback" or a wrapper.
    specific = [i for i in errors
                if re.search(r"\w+(Error|Exception): ", lines[i]) and not _WRAPPER.search(lines[i])]
    chosen = (specific or errors)
    if not chosen:
        return (last or ["(the log is empty)"])[-1].strip(), last
    return _with_details(lines, chosen[-1]), last


def _with_details(lines: list[str], index: int) -> str:
    """An exception line plus its indented detail lines (pydantic puts the reason there)."""
    parts = [lines[index].strip()]
    for line in lines[index + 1:index + 3]:
        if not line.startswith((" ", "\t")) or "errors.pydantic.dev" in line:
            break
        parts.append(line.strip())
    return " ".join(parts)


def _last(pattern: re.Pattern[str], text: str) -> re.Match[str] | None:
    matches = list(pattern.finditer(text))
    return matches[-1] if matches else None


def _int(text: str) -> int:
    return int(text.replace(",", ""))
