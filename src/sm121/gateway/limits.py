"""Limits on what a request body may be, beyond its size (--max-body-mb).

JSON nesting: no OpenAI request needs more than a few dozen levels (a tool's JSON schema is
the deepest part), while a body of a few kilobytes can nest thousands deep and drive any
recursive code (redaction, re-encoding, the engine's own validation) into a RecursionError.
The gateway answers such a body with a 400 before it holds any admission slot.
"""

from __future__ import annotations

import re
from typing import Any

MAX_JSON_DEPTH = 64


def deeper_than(value: Any, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether a decoded JSON value nests more than `limit` containers deep. Iterative, so
    it cannot itself exceed the recursion limit."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children
                     if isinstance(child, dict | list))
    return False


# How many JSON values (containers and scalars) and containers a body may hold. Parsing costs
# by the value, not by the byte: 20M empty lists in 60 MB took json.loads 15.5 s here, while
# 8 MB of a 2,000-message history (6,000 values) took 45 ms. An agent's request is a few
# thousand messages, tools and content blocks; these bounds leave it two orders of magnitude,
# and keep the parse of any admitted body on the event loop under about 0.1 s.
MAX_JSON_VALUES = 1_000_000
MAX_JSON_CONTAINERS = 100_000
# A JSON string, escapes included (the unrolled form: no backtracking per character).
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]", re.IGNORECASE)


def structure_problem(raw: bytes) -> tuple[str, str] | None:
    """(reason, message) when a body holds more values or containers than the bounds above,
    counted without parsing it: the strings blanked, the brackets and commas of what is left
    counted (an upper bound on the values of valid JSON; invalid JSON is refused anyway).
    C-speed scans only, so a hostile body is refused in a fraction of what parsing it costs."""
    values, containers = _count(raw)
    if values <= MAX_JSON_VALUES and containers <= MAX_JSON_CONTAINERS:
        return None  # within bounds even counting what strings hold: nothing to blank
    values, containers = _count(_STRING.sub(b'""', raw))
    if containers > MAX_JSON_CONTAINERS:
        return "too_many_values", (f"the request body holds {containers:,} JSON arrays and "
                                   f"objects; this gateway accepts at most "
                                   f"{MAX_JSON_CONTAINERS:,} (no agent request needs that many)")
    if values > MAX_JSON_VALUES:
        return "too_many_values", (f"the request body holds about {values:,} JSON values; "
                                   f"this gateway accepts at most {MAX_JSON_VALUES:,} (no "
                                   "agent request needs that many)")
    return None


def _count(text: bytes) -> tuple[int, int]:
    """(values, containers) of JSON text whose strings hold no brackets or separators; an
    upper bound of both when they may."""
    containers = text.count(b"[") + text.count(b"{")
    return text.count(b",") + text.count(b":") + containers + 1, containers


def may_hold_surrogates(raw: bytes) -> bool:
    """Whether a body has a \\uD800-\\uDFFF escape (a paired one is a valid emoji escape)."""
    return _SURROGATE_ESCAPE.search(raw) is not None


def lone_surrogate(value: Any) -> str | None:
    """The first string (key or value) holding a UTF-16 surrogate that json.loads left
    unpaired: no UTF-8 text can carry it, so it would fail where it is encoded (a digest,
    the engine's tokenizer). Iterative, as deeper_than."""
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode()
            except UnicodeEncodeError:
                return item
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return None
