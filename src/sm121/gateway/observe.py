"""What the gateway learns from a response on its way through: usage (token counts), the
number of SSE events, and an error the upstream reported. The bytes themselves are forwarded
untouched before they get here; this only reads a copy.

Per chunk the work is a byte count in C: usage and a reported error come in the last events
of a stream, so only a bounded tail is kept, and at the end only the last event naming usage
and the last naming an error are found (from the end) and decoded. A full SSE parse of every
chunk, and later of the whole tail, cost the gateway a noticeable share of its CPU.

Usage is read in each protocol's shape: `prompt_tokens`/`completion_tokens` (chat,
completions), `input_tokens`/`output_tokens` (Responses, under `response` in its events), and
Anthropic Messages, whose `input_tokens` leaves out the cached prompt tokens (counted apart as
`cache_read_input_tokens` and `cache_creation_input_tokens`) and whose stream may tell the
input only in its first event (`message_start`, under `message`): so the head of a stream is
kept too, bounded.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from sm121.protocols.usage import completion_tokens, prompt_tokens

_MAX_JSON_COPY = 8 * 1024 * 1024  # a non-stream body larger than this is not parsed for usage
_TAIL = 16 * 1024  # the last events of a stream: usage, finish, or an error
_HEAD = 16 * 1024  # the first events of a stream: Anthropic's message_start


@dataclass
class Observed:
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    events: int = 0
    error: str | None = None


class ResponseObserver:
    def __init__(self, event_stream: bool) -> None:
        self._event_stream = event_stream
        self._kept = bytearray()
        self._head = bytearray()
        self._events = 0
        self._last = b""
        self.result = Observed()

    def feed(self, chunk: bytes) -> None:
        if self._event_stream:
            # JSON escapes newlines, so a blank line only ever ends an event.
            self._events += chunk.count(b"\n\n") + (self._last == b"\n" and chunk[:1] == b"\n")
            self._last = chunk[-1:]
            if len(self._head) < _HEAD:
                self._head += chunk[:_HEAD - len(self._head)]
            self._kept += chunk
            if len(self._kept) > 2 * _TAIL:
                del self._kept[:-_TAIL]
        elif len(self._kept) + len(chunk) <= _MAX_JSON_COPY:
            self._kept += chunk

    def finish(self) -> Observed:
        if not self._event_stream:
            if self._kept:
                self._inspect(self._kept.decode("utf-8", errors="replace"))
            return self.result
        tail = bytes(self._kept)
        self.result.events = self._events - tail.rstrip().endswith(b"data: [DONE]")
        # Only the last usage event and the last error event matter: find them from the end
        # instead of parsing the whole tail (a full parse cost milliseconds per request).
        for marker in (b'"usage"', b'"error"'):
            data = _event_data(tail, tail.rfind(marker))
            if data is not None:
                self._inspect(data)
        if self.result.prompt_tokens is None:
            # Anthropic's message_delta may carry only output_tokens; the input is then in
            # message_start. Only the prompt is taken from it: its output count is a start.
            head = bytes(self._head)
            start = _decoded(_event_data(head, head.find(b'"message_start"')))
            if start is not None:
                self.result.prompt_tokens = prompt_tokens(_usage_in(start))
        return self.result

    def _inspect(self, text: str) -> None:
        data = _decoded(text)
        if data is None:
            return
        usage = _usage_in(data)
        prompt, completion = prompt_tokens(usage), completion_tokens(usage)
        if prompt is not None:
            self.result.prompt_tokens = prompt
        if completion is not None:
            self.result.completion_tokens = completion
        error = data.get("error")
        if isinstance(error, dict):
            self.result.error = str(error.get("message") or error)[:500]


def _decoded(text: str | None) -> dict[str, Any] | None:
    if text is None:
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def _usage_in(data: dict[str, Any]) -> dict[str, Any] | None:
    """Usage at the top (chat, completions, a Messages body, message_delta), under `response`
    (Responses events) or under `message` (Anthropic's message_start)."""
    for holder in (data, data.get("response"), data.get("message")):
        if isinstance(holder, dict) and isinstance(holder.get("usage"), dict):
            return holder["usage"]  # type: ignore[no-any-return]
    return None


def _event_data(tail: bytes, at: int) -> str | None:
    """The data of the SSE event around byte `at` (its data lines joined), or None."""
    if at < 0:
        return None
    start = tail.rfind(b"\n\n", 0, at)
    end = tail.find(b"\n\n", at)
    event = tail[start + 2 if start >= 0 else 0:end if end >= 0 else len(tail)]
    lines = [line[5:].removeprefix(b" ") for line in event.split(b"\n")
             if line.startswith(b"data:")]
    return b"\n".join(lines).decode("utf-8", errors="replace") if lines else None
