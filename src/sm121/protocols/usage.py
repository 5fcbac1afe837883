"""Token counts from a reply's `usage`, whatever the protocol: chat and completions'
prompt_tokens / completion_tokens, Anthropic Messages' input_tokens (which leaves out the
prompt-cache hits, counted apart as cache_read_input_tokens and cache_creation_input_tokens)
and Responses' input_tokens / output_tokens (whose input_tokens already holds the cached ones,
with no such fields). The gateway's observer, bench agents and agent-check read them here."""

from __future__ import annotations

from typing import Any, TypeGuard

ANTHROPIC_CACHED = ("cache_read_input_tokens", "cache_creation_input_tokens")


def prompt_tokens(usage: dict[str, Any] | None) -> int | None:
    """The whole prompt, cache hits included; None when the usage gives no prompt count."""
    if usage is None:
        return None
    if is_count(usage.get("prompt_tokens")):
        return int(usage["prompt_tokens"])
    if not is_count(usage.get("input_tokens")):
        return None
    return int(usage["input_tokens"]) + sum(int(usage[k]) for k in ANTHROPIC_CACHED
                                            if is_count(usage.get(k)))


def completion_tokens(usage: dict[str, Any] | None) -> int | None:
    if usage is None:
        return None
    for name in ("completion_tokens", "output_tokens"):
        if is_count(usage.get(name)):
            return int(usage[name])
    return None


def is_count(value: Any) -> TypeGuard[int]:
    """An int that is not a bool (JSON's true would pass isinstance(value, int))."""
    return isinstance(value, int) and not isinstance(value, bool)
