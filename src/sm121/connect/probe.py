"""One tiny request on each route the agent will call, before its settings are handed over:
an endpoint that lists the model but has no /v1/messages (or /v1/responses) would otherwise
get settings that fail at the agent's first turn. Bounded: one output token, a short timeout."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

from sm121.connect.agents import Agent
from sm121.engines.api_key import bearer
from sm121.engines.client_sync import SyncEngineClient
from sm121.engines.engine_error import EngineError

PROBE_TIMEOUT_S = 20.0  # one token on a loaded CPU engine takes a few seconds at most
_HI = [{"role": "user", "content": "hi"}]
# The headers Claude Code sends besides its key (the gateway and vLLM read the version)
_ANTHROPIC = {"anthropic-version": "2023-06-01"}


@dataclass(frozen=True)
class Probe:
    path: str
    body: dict[str, Any]
    headers: dict[str, str]


@dataclass(frozen=True)
class ProbeResult:
    path: str
    status: int | None  # None: no answer
    ok: bool
    detail: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def probes(agent: Agent, model: str) -> list[Probe]:
    chat = Probe("/v1/chat/completions", {"model": model, "messages": _HI, "max_tokens": 1}, {})
    responses = Probe("/v1/responses", {"model": model, "input": "hi", "max_output_tokens": 1}, {})
    if agent is Agent.CLAUDE_CODE:
        return [Probe("/v1/messages", {"model": model, "messages": _HI, "max_tokens": 1},
                      _ANTHROPIC),
                Probe("/v1/messages/count_tokens", {"model": model, "messages": _HI},
                      _ANTHROPIC)]
    if agent is Agent.CODEX:
        return [responses]
    if agent is Agent.OPENAI_SDK:
        return [chat, responses]
    return [chat]


def run_probes(url: str, key: str | None, agent: Agent, model: str,
               timeout_s: float = PROBE_TIMEOUT_S) -> list[ProbeResult]:
    return [_run(url, key, probe, timeout_s) for probe in probes(agent, model)]


def _run(url: str, key: str | None, probe: Probe, timeout_s: float) -> ProbeResult:
    client = SyncEngineClient(url, {**bearer(key), **probe.headers}, timeout_s)
    try:
        status, body = client.request(probe.path, probe.body)
    except EngineError as exc:
        return ProbeResult(probe.path, None, False, f"no answer: {exc.message}")
    if status == 200:
        return ProbeResult(probe.path, status, True, "answers")
    said = _message(body)
    if status in (404, 405):
        return ProbeResult(probe.path, status, False, f"not served here (HTTP {status}{said})")
    if status in (401, 403):
        return ProbeResult(probe.path, status, False, f"the key was refused (HTTP {status}{said})")
    return ProbeResult(probe.path, status, False, f"HTTP {status}{said}")


def _message(body: bytes) -> str:
    """The error's own message, one line, short: what the endpoint said about the probe."""
    try:
        data = json.loads(body)
    except ValueError:
        return ""
    error = data.get("error") if isinstance(data, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    if not isinstance(message, str):
        return ""
    line = "".join(c for c in " ".join(message.split()) if c.isprintable() and c not in "[]")
    return f": {line[:200]}"
