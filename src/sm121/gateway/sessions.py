"""Which agent session a request belongs to: a header, the `user` field, or a hash.

The hash covers the model and the first user message, not the system prompt: a system prompt
that carries a timestamp (the very layout the locality watch must catch) would otherwise make
every turn look like a new session, and the divergence would never be seen.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

DEFAULT_SESSION_HEADER = "x-session-id"


def session_id(headers: Mapping[str, str], body: dict[str, Any],
               header: str = DEFAULT_SESSION_HEADER) -> str:
    """The id, with its kind: h: a header, u: the `user` field, sha: the request's opening.
    A client's own id is kept only as a digest: it ends up in metric labels, the locality
    report, logs and captures, and a client may put anything there (an e-mail, a ticket, a
    token); a digest still groups the turns and routes them to one replica."""
    explicit = headers.get(header)
    if explicit:
        return "h:" + client_digest(explicit)
    user = body.get("user")
    if isinstance(user, str) and user:
        return "u:" + client_digest(user)
    return "sha:" + _digest(body)


def client_digest(value: str) -> str:
    """What stands for a client-chosen id anywhere sm121 writes it down. surrogatepass: a
    header of bytes that are not UTF-8 reaches here as lone surrogates, and is digested as
    the bytes it was rather than raising (a 500)."""
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:16]


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
