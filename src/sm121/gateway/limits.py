"""Limits on what a request body may be, beyond its size (--max-body-mb).

JSON nesting: no OpenAI request needs more than a few dozen levels (a tool's JSON schema is
the deepest part), while a body of a few kilobytes can nest thousands deep and drive any
recursive code (redaction, re-encoding, the engine's own validation) into a RecursionError.
The gateway answers such a body with a 400 before it holds any admission slot.
"""

from __future__ import annotations

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
