"""Redaction for captures: every string becomes its length, unless the protocol puts a
structural string at that very position.

An allow-list of positions, not of keys: `role`, `type`, `id`, `model` and the like are kept
only where the protocol puts them (message roles, content block types, ids of tool calls at
their own level, the model at the request's top level: gateway/redact_positions.py). The same
key anywhere else (inside a tool's input, a tool call's arguments, a schema, user metadata) is
user data. Under `arguments`, `metadata` and a nested `input` every key and scalar is
redacted; in a tool schema only JSON-Schema keywords, type names and booleans stay. Token ids
are text in another form: lists of ints under the keys that carry them become their length,
and the keys of maps keyed by tokens (logprobs, logit_bias) are replaced as well.
Elsewhere numbers, booleans and null stay, so parameters and usage remain readable; a kept
string must also be one plain word (a role, a type, an id, a model name).
"""

from __future__ import annotations

import json
import re
from typing import Any

from sm121.gateway.redact_positions import (
    DATA_BELOW_ROOT_KEYS,
    DATA_KEYS,
    SCHEMA_KEYS,
    SCHEMA_KEYWORDS,
    SCHEMA_NAME_MAPS,
    SCHEMA_TYPE_NAMES,
    STRUCTURAL_ROOT,
    TOKEN_ID_KEYS,
    TOKEN_MAP_FIELDS,
    TOKEN_MAP_KEYS,
    Position,
)
from sm121.protocols.sse import SSEEvent

MAX_DEPTH = 256  # the gateway lets through at most limits.MAX_JSON_DEPTH; a safety net
# A structural string is one word: a role, a block type, an id, a model name, an event type.
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:/@+-]{0,255}")


def redact(value: Any) -> Any:
    """A copy of a decoded JSON document (a body, or one stream event's data) with its text
    replaced by lengths."""
    return _walk(value, STRUCTURAL_ROOT, None, 0)


def _walk(value: Any, at: Position | None, key: str | None, depth: int) -> Any:
    """`at`: the value's position among the structural ones (None once off them); `key`: the
    key it sits under (a list's item sits under its list's key)."""
    if depth > MAX_DEPTH:
        return f"[redacted: nested deeper than {MAX_DEPTH}]"
    if isinstance(value, str):
        kept = at is not None and at.kept and _WORD.fullmatch(value)
        return value if kept else _chars(value)
    if isinstance(value, list):
        if _token_ids(key, value):
            return f"[redacted {len(value)} token ids]"
        item_at = at.children.get("[]") if at is not None else None
        return [_walk(item, item_at, key, depth + 1) for item in value]
    if isinstance(value, dict):
        return _walk_map(value, at, key, depth)
    return value


def _walk_map(value: dict[str, Any], at: Position | None, key: str | None, depth: int
              ) -> dict[str, Any]:
    if key in TOKEN_MAP_KEYS and not set(value) <= TOKEN_MAP_FIELDS:
        # Keyed by tokens: each value sits under the map's own key (a logprob, a bias).
        return {_hidden_key(i, name): _walk(item, None, key, depth + 1)
                for i, (name, item) in enumerate(value.items())}
    if key in SCHEMA_NAME_MAPS:  # names a schema defines; each value is a schema
        return {_hidden_key(i, name): _schema(item, depth + 1)
                for i, (name, item) in enumerate(value.items())}
    children = at.children if at is not None else _NO_CHILDREN
    out: dict[str, Any] = {}
    for name, item in value.items():
        special = _SPECIAL.get(name)
        if special is None:
            out[name] = _walk(item, children.get(name), name, depth + 1)
        elif special == "schema" and isinstance(item, dict):
            out[name] = _schema(item, depth + 1)
        elif (special == "data" or (special == "data below root" and depth > 0)) \
                and not _token_ids(name, item):
            out[name] = _data(item, depth + 1)
        else:
            out[name] = _walk(item, children.get(name), name, depth + 1)
    return out


_NO_CHILDREN: dict[str, Position] = {}
_SPECIAL = {**{k: "data below root" for k in DATA_BELOW_ROOT_KEYS},
            **{k: "schema" for k in SCHEMA_KEYS}, **{k: "data" for k in DATA_KEYS}}


def _token_ids(key: str | None, value: Any) -> bool:
    return (key in TOKEN_ID_KEYS and isinstance(value, list) and bool(value)
            and all(type(v) is int for v in value))


def _chars(value: str) -> str:
    return f"[redacted {len(value)} chars]"


def _hidden_key(index: int, name: str) -> str:
    return f"[redacted key {index}: {len(name)} chars]"


def _data(value: Any, depth: int) -> Any:
    """User data: the shape stays, every key and scalar is replaced."""
    if depth > MAX_DEPTH:
        return f"[redacted: nested deeper than {MAX_DEPTH}]"
    if isinstance(value, dict):
        return {_hidden_key(i, name): _data(item, depth + 1)
                for i, (name, item) in enumerate(value.items())}
    if isinstance(value, list):
        return [_data(item, depth + 1) for item in value]
    if isinstance(value, str):
        return _chars(value)
    if value is None:
        return None
    return f"[redacted {'boolean' if isinstance(value, bool) else 'number'}]"


def _schema(value: Any, depth: int) -> Any:
    """A JSON schema a client wrote: its keywords, type names and booleans stay."""
    if depth > MAX_DEPTH:
        return f"[redacted: nested deeper than {MAX_DEPTH}]"
    if isinstance(value, list):
        return [_schema(item, depth + 1) for item in value]
    if not isinstance(value, dict):
        return value if isinstance(value, bool) or value is None else _data(value, depth)
    out: dict[str, Any] = {}
    for index, (name, item) in enumerate(value.items()):
        if name == "type" and (item in SCHEMA_TYPE_NAMES if isinstance(item, str) else
                               isinstance(item, list) and all(
                                   isinstance(t, str) and t in SCHEMA_TYPE_NAMES for t in item)):
            out[name] = item
        elif name in SCHEMA_NAME_MAPS and isinstance(item, dict):
            out[name] = {_hidden_key(i, n): _schema(v, depth + 2)
                         for i, (n, v) in enumerate(item.items())}
        elif name in SCHEMA_KEYWORDS:
            out[name] = _schema(item, depth + 1)
        else:
            out[_hidden_key(index, name)] = _data(item, depth + 1)
    return out


def redacted_json(raw: bytes) -> bytes:
    try:
        return json.dumps(redact(json.loads(raw))).encode()
    except (ValueError, RecursionError):
        return f"[redacted {len(raw)} bytes, not JSON]".encode()


def redacted_event(event: SSEEvent) -> bytes:
    """One SSE event as a capture keeps it: the event name (the server's, structural) and
    its data redacted; only the stream's end marker passes as it is."""
    head = f"event: {event.event}\n" if event.event else ""
    data = event.data if event.is_done else redacted_json(event.data.encode()).decode()
    return f"{head}data: {data}\n\n".encode()
