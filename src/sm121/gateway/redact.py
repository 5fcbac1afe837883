"""Redaction for captures: every string becomes its length, unless its key is structural.

An allow-list, not a deny-list: a deny-list of "text keys" missed whatever the next API
added (Responses-API deltas, logprobs tokens, /tokenize token strings, stop sequences,
suffix). Here only the keys named below keep their string values (roles, object types,
model names, finish reasons, ids the server made); everything else that is a string is
replaced by "[redacted N chars]". Token ids are text in another form: lists of ints under
the keys that carry them are replaced by their length too, and the keys of maps keyed by
tokens (completions logprobs, logit_bias, prompt_logprobs, metadata) are replaced as well, and
so are the names a JSON schema defines (tool parameters, response formats).
Numbers, booleans and null stay, so parameters and usage remain readable.
"""

from __future__ import annotations

import json
from typing import Any

from sm121.sse import SSEEvent

STRUCTURAL_KEYS = frozenset({
    "object", "type", "role", "model", "finish_reason", "status", "id", "item_id",
    "response_id", "call_id", "tool_call_id", "system_fingerprint", "tool_choice",
    "service_tier", "reasoning_effort", "encoding_format", "truncation",
})
# Lists of ints under these keys are token ids (or a token's UTF-8 bytes): decodable text.
TOKEN_ID_KEYS = frozenset({"prompt", "input", "input_ids", "token_ids", "prompt_token_ids",
                           "tokens", "bytes"})
# Maps whose keys are tokens or user data, unless every key is one of the known fields.
DATA_MAP_KEYS = frozenset({"top_logprobs", "logit_bias", "prompt_logprobs", "metadata"})
# JSON-schema keywords whose map keys are the schema's own names (a tool's parameters, a
# response format's fields): a property called `customer_ssn` says what the tool is about.
# The values under them are schemas again, walked as any other value.
SCHEMA_NAME_MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions",
                              "dependentRequired", "dependentSchemas", "dependencies"})
_KNOWN_FIELDS = frozenset({"token", "logprob", "bytes", "top_logprobs", "rank",
                           "decoded_token"})
MAX_DEPTH = 256  # the gateway lets through at most limits.MAX_JSON_DEPTH; a safety net


def redact(value: Any, key: str | None = None, depth: int = 0) -> Any:
    """A copy of a decoded JSON value with its text replaced by lengths. `key` is the key
    the value sits under (list items inherit their list's key)."""
    if depth > MAX_DEPTH:
        return f"[redacted: nested deeper than {MAX_DEPTH}]"
    if isinstance(value, str):
        return value if key in STRUCTURAL_KEYS else f"[redacted {len(value)} chars]"
    if isinstance(value, list):
        if key in TOKEN_ID_KEYS and value and all(type(v) is int for v in value):
            return f"[redacted {len(value)} token ids]"
        return [redact(item, key, depth + 1) for item in value]
    if isinstance(value, dict):
        return _redact_map(value, key, depth)
    return value


def _redact_map(value: dict[str, Any], key: str | None, depth: int) -> dict[str, Any]:
    data_keys = key in DATA_MAP_KEYS and (key == "metadata" or not set(value) <= _KNOWN_FIELDS)
    schema_names = key in SCHEMA_NAME_MAPS
    out: dict[str, Any] = {}
    for index, (name, item) in enumerate(value.items()):
        if data_keys:
            out[f"[redacted key {index}: {len(name)} chars]"] = redact(item, key, depth + 1)
        elif schema_names:  # the value is a schema (or a list of names): no key of its own
            out[f"[redacted key {index}: {len(name)} chars]"] = redact(item, None, depth + 1)
        else:
            out[name] = redact(item, name, depth + 1)
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
