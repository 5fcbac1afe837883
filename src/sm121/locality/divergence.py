"""Pure divergence analysis: first differing token, reusable tokens at the block size, and the
message or field of the request that changed."""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

APPENDED = "appended"  # nothing earlier changed: the append-only layout prefix caching wants


@dataclass(frozen=True)
class Divergence:
    prompt_tokens: int
    previous_tokens: int
    first_divergence: int  # index of the first differing token (= common prefix length)
    block_size: int
    reusable_tokens: int  # the common prefix rounded down to whole blocks
    reusable_fraction: float  # of this prompt, what the cache can serve
    kept_fraction: float  # of the previous prompt, what stayed reusable
    changed: str  # e.g. "messages[0].content at char 12", "tools", "appended"

    @property
    def first_block(self) -> int:
        return self.first_divergence // self.block_size

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "first_block": self.first_block}


def common_prefix(a: Sequence[Any], b: Sequence[Any]) -> int:
    """Length of the common prefix of two token lists (or strings).

    Two token arrays of one type code are compared as machine integers in numpy: 2M tokens
    take a few milliseconds, where a Python loop (or slices of an array against a list, which
    never compare equal) took over 100 ms on the event loop."""
    limit = min(len(a), len(b))
    if isinstance(a, array) and isinstance(b, array) and a.typecode == b.typecode:
        return _array_prefix(a, b, limit)
    # Slices of one type compare in C: agent prompts share long prefixes.
    low, step = 0, 4096
    while low + step <= limit and a[low:low + step] == b[low:low + step]:
        low += step
    while low < limit and a[low] == b[low]:
        low += 1
    return low


def _array_prefix(a: array[Any], b: array[Any], limit: int) -> int:
    if limit == 0:
        return 0
    kind = np.dtype(f"u{a.itemsize}")  # equality is bitwise: signedness does not matter
    x = np.frombuffer(a, dtype=kind, count=limit)
    y = np.frombuffer(b, dtype=kind, count=limit)
    differs = x != y
    first = int(differs.argmax())
    return first if differs[first] else limit


def as_tokens(tokens: Sequence[int]) -> array[int]:
    """Token ids as the compact array the fast comparison takes (8 bytes per token)."""
    return tokens if isinstance(tokens, array) and tokens.typecode == "q" else array("q", tokens)


def compare(previous: Sequence[int], current: Sequence[int], block_size: int,
            changed: str) -> Divergence:
    if block_size < 1:
        raise ValueError("block_size must be at least 1")
    first = common_prefix(as_tokens(previous), as_tokens(current))
    reusable = (first // block_size) * block_size
    return Divergence(
        prompt_tokens=len(current),
        previous_tokens=len(previous),
        first_divergence=first,
        block_size=block_size,
        reusable_tokens=reusable,
        reusable_fraction=reusable / len(current) if current else 0.0,
        kept_fraction=reusable / len(previous) if previous else 0.0,
        changed=changed,
    )


def changed_field(previous: dict[str, Any], current: dict[str, Any]) -> str:
    """The first part of the request that differs, in the order a chat template renders it:
    tools (usually rendered up front), then each message, then a completions prompt."""
    if previous.get("tools") != current.get("tools"):
        return "tools"
    old, new = previous.get("messages"), current.get("messages")
    if isinstance(old, list) and isinstance(new, list):
        return _changed_message(old, new)
    old_prompt, new_prompt = previous.get("prompt"), current.get("prompt")
    if isinstance(old_prompt, str) and isinstance(new_prompt, str):
        at = _first_char_difference(old_prompt, new_prompt)
        return APPENDED if at == len(old_prompt) else f"prompt at char {at}"
    return "request" if previous != current else APPENDED


def _changed_message(old: list[Any], new: list[Any]) -> str:
    for index, (a, b) in enumerate(zip(old, new, strict=False)):
        if a == b:
            continue
        if not (isinstance(a, dict) and isinstance(b, dict)):
            return f"messages[{index}]"
        for key in sorted(set(a) | set(b), key=_field_order):
            if a.get(key) != b.get(key):
                where = f"messages[{index}].{key}"
                va, vb = a.get(key), b.get(key)
                if isinstance(va, str) and isinstance(vb, str):
                    where += f" at char {_first_char_difference(va, vb)}"
                return where
    if len(new) < len(old):
        return f"messages[{len(new)}] removed"
    return APPENDED


def _field_order(key: str) -> tuple[int, str]:
    return ({"role": 0, "name": 1, "content": 2}.get(key, 3), key)


def _first_char_difference(a: str, b: str) -> int:
    return common_prefix(a, b)
