"""The engine client's small sync twin, for the callers that have no event loop: readiness
and the watchdogs (/v1/models, /health), `top` (/metrics), and the CLI and `serve
--gateway-join` asking a gateway for its own reports.

The stdlib's urllib, so these callers (and `sm121 --help`) never import aiohttp. Same rules
as the async client (client.py): /health falls back to /v1/models on a 404; an answer other
than 200 is an EngineError with its status; no answer at all is one with status None."""

from __future__ import annotations

import http.client
import json
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any

from sm121.engines.api_key import unauthorized
from sm121.engines.engine_error import EngineError

DEFAULT_TIMEOUT_S = 10.0
_NO_ANSWER = (urllib.error.URLError, OSError, http.client.HTTPException, ValueError)


class SyncEngineClient:
    def __init__(self, base_url: str, headers: Mapping[str, str] | None = None,
                 timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.base_url = base_url.rstrip("/")
        self.headers = dict(headers or {})
        self.timeout_s = timeout_s

    def request(self, path: str, body: Mapping[str, Any] | None = None,
                timeout_s: float | None = None) -> tuple[int, bytes]:
        """GET (or POST a JSON body to) `path`: the status and body of any HTTP answer; an
        EngineError with status None when nothing answered in time."""
        url = f"{self.base_url}{path}"
        headers = dict(self.headers)
        data = None
        if body is not None:
            data = json.dumps(dict(body)).encode()
            headers["Content-Type"] = "application/json"
        request = urllib.request.Request(url, data=data, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=timeout_s or self.timeout_s) as resp:
                return int(resp.status), resp.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()
        except _NO_ANSWER as exc:
            raise EngineError(f"{url}: {reason(exc)}", status=None) from exc

    def status(self, path: str, timeout_s: float | None = None) -> int:
        return self.request(path, timeout_s=timeout_s)[0]

    def get_json(self, path: str, timeout_s: float | None = None) -> dict[str, Any]:
        return self._json(path, *self.request(path, timeout_s=timeout_s))

    def post_json(self, path: str, body: Mapping[str, Any],
                  timeout_s: float | None = None) -> dict[str, Any]:
        return self._json(path, *self.request(path, body, timeout_s))

    def models(self) -> dict[str, Any]:
        return self.get_json("/v1/models")

    def tokenize(self, body: Mapping[str, Any]) -> dict[str, Any]:
        return self.post_json("/tokenize", body)

    def metrics_text(self, timeout_s: float | None = None) -> str:
        status, body = self.request("/metrics", timeout_s=timeout_s)
        self._check(status, body, "/metrics")
        return body.decode("utf-8", errors="replace")

    def healthy(self, timeout_s: float | None = None) -> bool:
        """/health answers 200; a server without the route (404) is asked for /v1/models
        instead. No answer in time is not healthy."""
        try:
            for path in ("/health", "/v1/models"):
                status = self.status(path, timeout_s)
                if status != 404:
                    return status == 200
        except EngineError:
            return False
        return False

    def _json(self, path: str, status: int, body: bytes) -> dict[str, Any]:
        self._check(status, body, path)
        try:
            data = json.loads(body)
        except ValueError as exc:
            raise EngineError(f"{self.base_url}{path} answered 200 with no JSON",
                              status=status) from exc
        return data if isinstance(data, dict) else {}

    def _check(self, status: int, body: bytes, path: str) -> None:
        if status == 200:
            return
        if status in (401, 403):
            raise unauthorized(self.base_url, status)
        detail = body[:400].decode("utf-8", errors="replace")
        raise EngineError(f"{path}: HTTP {status} from {self.base_url}{path}: {detail}",
                          status=status)


def reason(exc: BaseException) -> str:
    """What went wrong, as urllib words it (the socket error inside a URLError)."""
    said = getattr(exc, "reason", None)
    return str(said or exc) or type(exc).__name__
