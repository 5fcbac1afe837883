"""A served model's card (/v1/models): the context one request may use, as each engine says it.
Apart from the HTTP clients so a reader of a card (connect) imports no aiohttp."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def card_context(card: Mapping[str, Any]) -> int | None:
    """The context one request may use, from a /v1/models card: vLLM's `max_model_len`, or
    llama-server's `meta.n_ctx`, which is ONE SLOT's context (`-c` split across `-np` slots
    unless `--kv-unified`), not `-c`: what an agent must be told. None: the card does not say,
    or says something that is not a positive integer."""
    meta = card.get("meta")
    value = card.get("max_model_len")
    if value is None and isinstance(meta, Mapping):
        value = meta.get("n_ctx")
    valid = isinstance(value, int) and not isinstance(value, bool) and 0 < value < 2**31
    return value if valid else None  # type: ignore[return-value]
