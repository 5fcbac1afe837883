"""Which agent session a request belongs to: a header, the `user` field, or a hash.

The hash covers the model and the first user message, not the system prompt: a system prompt
that carries a timestamp (the very layout the locality watch must catch) would otherwise make
every turn look like a new session, and the divergence would never be seen.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any

DEFAULT_SESSION_HEADER = "x-session-id"
_SAFE = re.compile(r"[^A-Za-z0-9._:@/-]")
MAX_ID = 64


def session_id(headers: Mapping[str, str], body: dict[str, Any],
               header: str = DEFAULT_SESSION_HEADER) -> str:
    explicit = headers.get(header)
    if explicit:
        return "h:" + _clean(explicit)
    user = body.get("user")
    if isinstance(user, str) and user:
        return "u:" + _clean(user)
    return "sha:" + _digest(body)


def _clean(value: str) -> str:
    # Session ids end up in metric labels and log lines: keep them short and printable.
    return _SAFE.sub("_", value)[:MAX_ID]


def _digest(body: dict[str, Any]) -> str:
    anchor: Any = body.get("prompt")
    messages = body.get("messages") or body.get("input")
    if isinstance(messages, list) and messages:
        users = [m for m in messages if isinstance(m, dict) and m.get("role") == "user"]
        anchor = (users or messages)[0]
    elif isinstance(anchor, str):
        anchor = anchor[:512]  # a completions prompt: its opening identifies the task
    elif isinstance(messages, str):
        anchor = messages[:512]
    blob = json.dumps([body.get("model"), anchor], sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]
