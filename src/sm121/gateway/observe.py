"""What the gateway learns from a response on its way through: usage (token counts), the
number of SSE events, and an error the upstream reported. The bytes themselves are forwarded
untouched before they get here; this only reads a copy.

Per event the work is a substring test: most chunks carry neither usage nor an error, and the
gateway must not spend a JSON parse on each one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from sm121.sse import SSEParser

_MAX_JSON_COPY = 8 * 1024 * 1024  # a non-stream body larger than this is not parsed for usage


@dataclass
class Observed:
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    events: int = 0
    error: str | None = None


class ResponseObserver:
    def __init__(self, event_stream: bool) -> None:
        self._parser = SSEParser() if event_stream else None
        self._copy = bytearray()
        self.result = Observed()

    def feed(self, chunk: bytes) -> None:
        if self._parser is None:
            if len(self._copy) + len(chunk) <= _MAX_JSON_COPY:
                self._copy += chunk
            return
        for event in self._parser.feed(chunk):
            self._event(event.data)

    def finish(self) -> Observed:
        if self._parser is not None:
            for event in self._parser.flush():
                self._event(event.data)
        elif self._copy:
            self._inspect(self._copy.decode("utf-8", errors="replace"))
        return self.result

    def _event(self, data: str) -> None:
        if data == "[DONE]":
            return
        self.result.events += 1
        if '"usage"' in data or '"error"' in data:
            self._inspect(data)

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
