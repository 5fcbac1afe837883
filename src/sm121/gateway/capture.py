"""Opt-in capture of raw request and response bytes, for replaying and debugging agents.

Never on by default. Files are 0600 in a 0700 directory. Secrets (Authorization and similar
headers) are never written. With redaction, text content (messages, prompts, generated text,
tool-call arguments) is replaced by its length; structure, parameters and usage remain.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from sm121.sse import SSEParser

_SECRET_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie", "set-cookie",
                             "x-api-key", "api-key"})
_TEXT_KEYS = frozenset({"content", "text", "prompt", "input", "instructions", "arguments",
                        "reasoning_content", "reasoning", "refusal", "delta_text"})
_MAX_REDACT_BUFFER = 64 * 1024 * 1024


def redact(value: Any) -> Any:
    """Replace every text leaf under a text-bearing key by a marker with its length."""
    if isinstance(value, dict):
        return {k: _redact_text(v) if k in _TEXT_KEYS else redact(v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v) for v in value]
    return value


def _redact_text(value: Any) -> Any:
    if isinstance(value, str):
        return f"[redacted {len(value)} chars]"
    if isinstance(value, list) and all(isinstance(v, int) for v in value):
        return f"[redacted {len(value)} token ids]"
    return redact(value)


def safe_headers(headers: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in headers.items() if k.lower() not in _SECRET_HEADERS}


def _open_private(path: Path) -> IO[bytes]:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    return os.fdopen(fd, "wb")


class Capture:
    def __init__(self, directory: Path, redact_content: bool) -> None:
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.chmod(directory, 0o700)  # an existing directory may have been wider
        self.directory = directory
        self.redact = redact_content

    def start(self, request_id: str, method: str, path: str, headers: Mapping[str, str],
              body: bytes) -> CaptureRecord:
        return CaptureRecord(self, request_id, {
            "id": request_id, "time": time.time(), "method": method, "path": path,
            "request_headers": safe_headers(headers), "redacted": self.redact,
        }, body)


class CaptureRecord:
    def __init__(self, capture: Capture, request_id: str, meta: dict[str, Any],
                 body: bytes) -> None:
        self._redact = capture.redact
        self._base = capture.directory / request_id
        self._meta = meta
        with _open_private(self._with(".request")) as handle:
            handle.write(_redacted_json(body) if self._redact else body)
        self._response = _open_private(self._with(".response"))
        self._sse: SSEParser | None = None
        self._held = bytearray()  # redaction of a non-stream body needs the whole body

    def _with(self, suffix: str) -> Path:
        return self._base.with_name(self._base.name + suffix)

    def note(self, **fields: Any) -> None:
        """Facts for replay (session id, arrival and first-byte times, token counts): numbers
        and ids only, never content, so they are kept under redaction too."""
        self._meta.update(fields)

    def response_head(self, status: int, headers: Mapping[str, str]) -> None:
        self._meta.update(status=status, response_headers=safe_headers(headers))
        if self._redact and "text/event-stream" in headers.get("Content-Type", ""):
            self._sse = SSEParser()

    def chunk(self, data: bytes) -> None:
        if not self._redact:
            self._response.write(data)
        elif self._sse is not None:
            for event in self._sse.feed(data):
                self._response.write(_redacted_event(event.data))
        elif len(self._held) < _MAX_REDACT_BUFFER:
            self._held += data

    def finish(self, outcome: str) -> None:
        if self._sse is not None:
            for event in self._sse.flush():
                self._response.write(_redacted_event(event.data))
        elif self._held:
            self._response.write(_redacted_json(bytes(self._held)))
        self._response.close()
        self._meta["outcome"] = outcome
        self._meta["finished"] = time.time()
        with _open_private(self._with(".meta.json")) as handle:
            handle.write(json.dumps(self._meta, indent=2).encode())


def _redacted_json(raw: bytes) -> bytes:
    try:
        return json.dumps(redact(json.loads(raw))).encode()
    except ValueError:
        return f"[redacted {len(raw)} bytes, not JSON]".encode()


def _redacted_event(data: str) -> bytes:
    if data.startswith("{"):
        data = _redacted_json(data.encode()).decode()
    return f"data: {data}\n\n".encode()
