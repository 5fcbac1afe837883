"""What the gateway learns from a response on its way through: usage (token counts), the
number of SSE events, and an error the upstream reported. The bytes themselves are forwarded
untouched before they get here; this only reads a copy.

Per chunk the work is a byte count in C: usage and a reported error come in the last events
of a stream, so only a bounded tail is kept, and at the end only the last event naming usage
and the last naming an error are found (from the end) and decoded. A full SSE parse of every
chunk, and later of the whole tail, cost the gateway a noticeable share of its CPU.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

_MAX_JSON_COPY = 8 * 1024 * 1024  # a non-stream body larger than this is not parsed for usage
_TAIL = 16 * 1024  # the last events of a stream: usage, finish, or an error


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
        self._events = 0
        self._last = b""
        self.result = Observed()

    def feed(self, chunk: bytes) -> None:
        if self._event_stream:
            # JSON escapes newlines, so a blank line only ever ends an event.
            self._events += chunk.count(b"\n\n") + (self._last == b"\n" and chunk[:1] == b"\n")
            self._last = chunk[-1:]
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
        return self.result

    def _inspect(self, text: str) -> None:
        try:
            data = json.loads(text)
        except ValueError:
            return
        if isinstance(data, dict):
            self._usage(data.get("usage"))
            error = data.get("error")
            if isinstance(error, dict):
                self.result.error = str(error.get("message") or error)[:500]
            elif isinstance(data.get("response"), dict):  # responses API events
                self._usage(data["response"].get("usage"))

    def _usage(self, usage: Any) -> None:
        if not isinstance(usage, dict):
            return
        prompt = usage.get("prompt_tokens", usage.get("input_tokens"))
        completion = usage.get("completion_tokens", usage.get("output_tokens"))
        if isinstance(prompt, int):
            self.result.prompt_tokens = prompt
        if isinstance(completion, int):
            self.result.completion_tokens = completion


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
