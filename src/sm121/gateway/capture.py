"""Opt-in capture of raw request and response bytes, for replaying and debugging agents.

Never on by default. Files are 0600 in a 0700 directory, which is opened once without
following a link and refused when another user owns it (a planted link or folder would
otherwise receive the prompts, or have its target chmodded); every file is created inside
that open folder. Secrets (Authorization and similar headers) are never written, nor a
query string (`?key=...` is how some clients pass a key). With redaction (gateway/redact.py)
every text value is replaced by its length; structure, parameters and usage remain; only an
allow-list of request headers is kept, and the session header as a digest.

A capture is a debugging aid, never a reason to fail a request: any error while writing one
(a full disk, a deleted directory, a body redaction cannot take) is logged once, the record
is abandoned, and the request goes on as if capture were off.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import re
import time
import weakref
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any, ParamSpec, TypeVar

from sm121.errors import Sm121Error
from sm121.gateway.redact import redacted_event, redacted_json
from sm121.gateway.sessions import DEFAULT_SESSION_HEADER, client_digest
from sm121.protocols.sse import SSEParser

log = logging.getLogger("sm121.gateway")
_SECRET_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie", "set-cookie",
                             "x-api-key", "api-key"})
# Without redaction the content is kept in clear, but credentials never are: besides the
# names above, any header whose name says it carries one (X-Goog-Api-Key, OpenAI-Organization,
# X-Auth-Token, ...).
_SECRET_NAME = re.compile(r"key|token|secret|auth|cookie|passw|credential|signature|"
                          r"organization|project", re.IGNORECASE)
# Under redaction only these request headers are kept (an allow-list: whatever the next
# client sends is not written): what says how the body is framed and encoded, which
# protocol version it speaks, and which client program sent it.
REDACTED_REQUEST_HEADERS = frozenset({
    "content-type", "content-length", "content-encoding", "transfer-encoding", "accept",
    "accept-encoding", "user-agent", "anthropic-version", "anthropic-beta", "openai-beta",
})
_MAX_REDACT_BUFFER = 64 * 1024 * 1024
P = ParamSpec("P")
R = TypeVar("R")


def safe_headers(headers: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in headers.items()
            if k.lower() not in _SECRET_HEADERS and not _SECRET_NAME.search(k)}


def redacted_request_headers(headers: Mapping[str, str], session_header: str) -> dict[str, str]:
    """The allow-list, plus the session header as the digest the session id is made of (so
    a capture still groups a session's turns)."""
    kept = {k: v for k, v in headers.items() if k.lower() in REDACTED_REQUEST_HEADERS}
    session = headers.get(session_header)
    if session:
        kept[session_header] = client_digest(session)
    return kept


def _open_private(name: str, folder: int) -> IO[bytes]:
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600,
                 dir_fd=folder)
    return os.fdopen(fd, "wb")


def open_capture_folder(directory: Path) -> int:
    """The capture folder, created if missing, as an open descriptor: never through a
    symbolic link, only a folder this user owns, made 0700 (an existing one may be wider)."""
    hint = "give --capture a folder of your own (a new path is created, 0700)"
    try:
        directory.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            os.mkdir(directory, 0o700)
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError as exc:
        raise Sm121Error(f"capture folder {directory} cannot be used: it is a symbolic link, "
                         f"not a folder, or not writable ({exc.strerror})", hint) from exc
    owner = os.fstat(fd).st_uid
    if owner != os.getuid():
        os.close(fd)
        raise Sm121Error(f"capture folder {directory} belongs to another user (uid {owner})",
                         hint)
    os.fchmod(fd, 0o700)
    return fd


class Capture:
    def __init__(self, directory: Path, redact_content: bool,
                 on_failure: Callable[[], None] = lambda: None,
                 session_header: str = DEFAULT_SESSION_HEADER) -> None:
        self.folder = open_capture_folder(directory)
        # Closed when the last record is gone: a record still writing keeps its folder.
        weakref.finalize(self, os.close, self.folder)
        self.directory = directory
        self.redact = redact_content
        self.on_failure = on_failure
        self.session_header = session_header

    def start(self, request_id: str, method: str, path: str, headers: Mapping[str, str],
              body: bytes) -> CaptureRecord | None:
        """A record for one exchange, or None when it cannot be written (logged)."""
        try:
            path = path.partition("?")[0]  # client text, and where some clients put a key
            if self.redact:
                kept = redacted_request_headers(headers, self.session_header)
            else:
                kept = safe_headers(headers)
            return CaptureRecord(self, request_id, {
                "id": request_id, "time": time.time(), "method": method, "path": path,
                "request_headers": kept, "redacted": self.redact,
            }, body)
        except Exception as exc:
            _failed(self, request_id, exc)
            return None


def _failed(capture: Capture, request_id: str, exc: BaseException) -> None:
    log.warning("capture of request %s abandoned: %r (the request itself is unaffected)",
                request_id, exc)
    capture.on_failure()


def _guarded(method: Callable[P, None]) -> Callable[P, None]:
    """Run a record's step; on any error, log, close the record and ignore it from then on."""

    @functools.wraps(method)
    def run(*args: P.args, **kwargs: P.kwargs) -> None:
        record = args[0]
        assert isinstance(record, CaptureRecord)
        if record.broken:
            return
        try:
            method(*args, **kwargs)
        except Exception as exc:
            record.broken = True
            record.close_quietly()
            _failed(record.capture, record.request_id, exc)

    return run


class CaptureRecord:
    def __init__(self, capture: Capture, request_id: str, meta: dict[str, Any],
                 body: bytes) -> None:
        self.capture, self.request_id = capture, request_id
        self.broken = False
        self._redact = capture.redact
        self._folder = capture.folder
        self._meta = meta
        with _open_private(self._with(".request"), self._folder) as handle:
            handle.write(redacted_json(body) if self._redact else body)
        self._response = _open_private(self._with(".response"), self._folder)
        self._sse: SSEParser | None = None
        self._held = bytearray()  # redaction of a non-stream body needs the whole body

    def _with(self, suffix: str) -> str:
        return self.request_id + suffix

    def note(self, **fields: Any) -> None:
        """Facts for replay (session id, arrival and first-byte times, token counts): numbers
        and ids only, never content, so they are kept under redaction too (a client's own
        session id is already a digest: sessions.session_id)."""
        self._meta.update(fields)

    @_guarded
    def response_head(self, status: int, headers: Mapping[str, str]) -> None:
        self._meta.update(status=status, response_headers=safe_headers(headers))
        if self._redact and "text/event-stream" in headers.get("Content-Type", ""):
            self._sse = SSEParser()

    @_guarded
    def chunk(self, data: bytes) -> None:
        if not self._redact:
            self._response.write(data)
        elif self._sse is not None:
            for event in self._sse.feed(data):
                self._response.write(redacted_event(event))
        elif len(self._held) < _MAX_REDACT_BUFFER:
            self._held += data

    @_guarded
    def finish(self, outcome: str) -> None:
        if self._sse is not None:
            for event in self._sse.flush():
                self._response.write(redacted_event(event))
        elif self._held:
            self._response.write(redacted_json(bytes(self._held)))
        self._response.close()
        self._meta["outcome"] = outcome
        self._meta["finished"] = time.time()
        with _open_private(self._with(".meta.json"), self._folder) as handle:
            handle.write(json.dumps(self._meta, indent=2).encode())

    def close_quietly(self) -> None:
        try:
            self._response.close()
        except Exception as exc:  # closing a broken file must not raise a second time
            log.debug("closing capture %s: %r", self.request_id, exc)
