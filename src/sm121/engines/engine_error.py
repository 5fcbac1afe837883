"""The one error of the engine client, async and sync: a server that did not answer, or did
not answer 200. `status` is the HTTP status, None when nothing answered, so a caller tells a
refused key (401/403: retrying cannot fix it) from a server still booting."""

from __future__ import annotations

from sm121.errors import Sm121Error

HINT = "check --url and --model (`curl URL/v1/models` lists the served models)"


class EngineError(Sm121Error):
    def __init__(self, message: str, hint: str = HINT, status: int | None = None) -> None:
        super().__init__(message, hint)
        self.status = status
