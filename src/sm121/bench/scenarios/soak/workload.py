"""What a soak's agents do, behind one small interface: `coding-agent` runs the agent
benchmark's sessions (agent_sessions.py); `chat-loop` is the plain loop below.

The chat loop is a simple stand-in for an agent: each agent holds one conversation and
appends to it turn after turn (a tool result, then the model's reply), so its prompts are
append-only and reuse the prefix cache as an agent framework's do. A session that grows past
its token budget starts over with a fresh salt, so agents never share each other's cache."""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from sm121.bench.client import BenchClient
from sm121.bench.scenarios.soak.agent_sessions import AgentSessions
from sm121.bench.scenarios.soak.turn import SoakWorkload, TurnOutcome
from sm121.errors import Sm121Error
from sm121.protocols.replies import ChatCompletion, Usage

__all__ = ["WORKLOADS", "ChatLoop", "TurnOutcome", "SoakWorkload", "workload"]

_SYSTEM = ("You are a coding agent. Tools: read_file(path), write_file(path, text), "
           "run(command), search(query). Answer with one tool call per turn. ") * 8
_TOOL_OUTPUT = ("def handler(request):\n    data = parse(request.body)\n    if not data:\n"
                "        return error(400)\n    return ok(process(data))\n") * 6


@dataclass
class ChatLoop:
    """Multi-turn chat per agent, append-only, stream: false (tokens from usage)."""

    max_tokens: int = 48
    session_tokens: int = 6000  # start a new session past this prompt size
    name: str = "chat-loop"
    api: str = "chat"
    _sessions: dict[int, list[dict[str, str]]] = field(default_factory=dict)

    async def prepare(self, client: BenchClient) -> None:
        return None

    def _messages(self, agent: int) -> list[dict[str, str]]:
        if agent not in self._sessions:
            salt = secrets.token_hex(6)
            self._sessions[agent] = [{"role": "system", "content": f"[session {salt}] {_SYSTEM}"}]
        turn = len(self._sessions[agent]) // 2
        self._sessions[agent].append({"role": "user", "content": (
            f"Tool result of turn {turn}:\n{_TOOL_OUTPUT}\nWhat next?")})
        return self._sessions[agent]

    async def step(self, client: BenchClient, agent: int) -> TurnOutcome:
        messages = self._messages(agent)
        body: dict[str, Any] = {"model": client.model, "messages": messages,
                                "max_tokens": self.max_tokens, "temperature": 0,
                                "ignore_eos": True, "stream": False}
        started = time.monotonic()
        try:
            reply = ChatCompletion.model_validate(
                await client.post_json("/v1/chat/completions", body))
        except (Sm121Error, aiohttp.ClientError, TimeoutError, ValueError) as exc:
            messages.pop()  # the turn did not happen: the next one retries it
            message = exc.message if isinstance(exc, Sm121Error) else repr(exc)
            return TurnOutcome(False, latency_s=time.monotonic() - started,
                               error=message[:300])
        latency = time.monotonic() - started
        usage = reply.usage or Usage()
        text = reply.choices[0].message.text if reply.choices else ""
        messages.append({"role": "assistant", "content": text})
        prompt = usage.prompt_tokens or 0
        if prompt > self.session_tokens:
            self._sessions.pop(agent)
        details = usage.prompt_tokens_details
        cached = details.cached_tokens if details else None  # None: the reply said no count
        return TurnOutcome(True, usage.completion_tokens or 0, prompt, cached, latency)


def workload(name: str, max_tokens: int | None) -> SoakWorkload:
    """The soak workload of this name; max_tokens None: its own output sizes."""
    if name == "coding-agent":
        return AgentSessions(max_tokens=max_tokens)
    if name == "chat-loop":
        return ChatLoop(max_tokens=max_tokens or ChatLoop.max_tokens)
    raise Sm121Error(f"unknown soak workload {name!r}", f"one of: {', '.join(WORKLOADS)}")


WORKLOADS = ("coding-agent", "chat-loop")
