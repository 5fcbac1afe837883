"""Readiness: the first successful generation, with its token count checked. An open port or a
200 from /v1/models only says the API server is up, not that the engine can generate."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar
from urllib.parse import urlparse

from sm121.engines.api_key import api_key, bearer, unauthorized
from sm121.engines.client_sync import SyncEngineClient
from sm121.engines.engine_error import EngineError
from sm121.errors import Sm121Error
from sm121.plan.model import ReadinessProbe
from sm121.protocols.routes import CHAT, COMPLETIONS

T = TypeVar("T")
GENERATION_TIMEOUT_S = 60.0


class NotReady(Sm121Error):
    """The engine did not become ready; the message says what was seen."""


@dataclass(frozen=True)
class ReadinessResult:
    port_open_s: float
    first_generation_s: float
    completion_tokens: int


def port_in_use(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host if host not in ("0.0.0.0", "") else "127.0.0.1", port)) == 0


def wait_ready(probe: ReadinessProbe, started: float, alive: Callable[[], bool],
               on_phase: Callable[[str], None] = lambda _: None) -> ReadinessResult:
    """Poll until a generation succeeds. `alive` is asked between polls so a dead engine is
    noticed at once instead of at the timeout; so is a 401 (a key is missing or wrong)."""
    deadline = started + probe.timeout_s
    key = api_key(engine_first=True)
    _wait(lambda: api_answers(probe.url, api_key=key) or None, deadline, alive,
          "the API to answer")
    port_open_s = time.monotonic() - started
    on_phase("api up")
    tokens = _wait(lambda: _generate(probe, key), deadline, alive, "a first generation")
    if probe.tools:
        check_tool_request(probe, key)
    return ReadinessResult(port_open_s, time.monotonic() - started, tokens)


def _wait(check: Callable[[], T | None], deadline: float, alive: Callable[[], bool],
             what: str) -> T:
    while True:
        if not alive():
            raise NotReady(f"the engine exited while waiting for {what}")
        result = check()
        if result is not None:
            return result
        if time.monotonic() > deadline:
            raise NotReady(f"timed out waiting for {what}")
        time.sleep(0.5)


def health_ok(url: str, timeout_s: float = 10.0) -> bool:
    """URL/health answers 200 within timeout_s: what both watchdogs ask of a serving
    engine (an engine busy with a long prefill still answers it)."""
    return SyncEngineClient(url).healthy(timeout_s)


def api_answers(url: str, timeout_s: float = 2, api_key: str | None = None) -> bool:
    """GET /v1/models answers 200: the API server is up (not yet proof it can generate).
    A 401 or 403 raises NotReady at once: waiting longer cannot fix a key."""
    try:
        status = SyncEngineClient(url, bearer(api_key)).status("/v1/models", timeout_s)
    except EngineError:
        return False
    if status in (401, 403):
        raise NotReady(str(unauthorized(url, status)))
    return status == 200


def _generate(probe: ReadinessProbe, key: str | None = None) -> int | None:
    body = {"model": probe.model, "prompt": probe.prompt, "max_tokens": probe.max_tokens,
            "temperature": 0, "ignore_eos": True, "stream": False}
    try:
        status, raw = SyncEngineClient(probe.url, bearer(key)).request(
            COMPLETIONS.route, body, timeout_s=GENERATION_TIMEOUT_S)
    except EngineError:
        return None
    if status in (401, 403):
        raise NotReady(str(unauthorized(probe.url, status)))
    if status in (400, 404, 422):
        detail = raw.decode(errors="replace")[:300]
        raise NotReady(f"the readiness request was refused ({status}): {detail}")
    if status >= 400:
        return None
    try:
        data = json.loads(raw)
    except ValueError:
        return None
    tokens = (data.get("usage") or {}).get("completion_tokens") if isinstance(data, dict) \
        else None
    if tokens != probe.max_tokens:
        raise NotReady(f"the readiness generation returned {tokens} tokens, expected "
                       f"{probe.max_tokens} (ignore_eos was set): the engine is not serving correctly")
    return int(tokens)


# One tiny closed-schema tool: an agent profile that refuses it refuses every agent.
READINESS_TOOL = {"type": "function", "function": {
    "name": "ping", "description": "Readiness check.",
    "parameters": {"type": "object", "properties": {}, "additionalProperties": False}}}


def check_tool_request(probe: ReadinessProbe, key: str | None = None) -> None:
    """A chat request carrying `tools` (tool_choice auto, as agents send it) is accepted.
    vLLM answers 400 when the engine has no tool calling; that fails the serve with the fix."""
    body = {"model": probe.model, "messages": [{"role": "user", "content": probe.prompt}],
            "tools": [READINESS_TOOL], "tool_choice": "auto", "max_tokens": 1, "temperature": 0}
    try:
        status, raw = SyncEngineClient(probe.url, bearer(key)).request(
            CHAT.route, body, timeout_s=GENERATION_TIMEOUT_S)
    except EngineError as exc:
        raise NotReady(f"a chat request with tools failed: {exc.message}") from exc
    if status < 400:
        return
    detail = raw.decode(errors="replace")[:300]
    fix = ("add tool-call-parser NAME and enable-auto-tool-choice: true to the recipe "
           "(or --set enable-auto-tool-choice=true --set tool-call-parser=NAME); NAME is "
           "the parser for the model's chat template, e.g. hermes")
    if status == 400:
        raise NotReady(f"this agent profile refuses tool calls: a chat request with "
                       f"tools got 400 ({detail}); fix: {fix}")
    raise NotReady(f"a chat request with tools failed ({status}): {detail}")


def host_port(url: str) -> tuple[str, int]:
    parsed = urlparse(url)
    return parsed.hostname or "127.0.0.1", parsed.port or 80
