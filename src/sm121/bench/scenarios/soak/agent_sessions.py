"""The soak's coding-agent workload: `bench agents`' sessions (a salted system prompt of the
preset's size, tools, append-only tool results of exact token counts), one turn per step.

Each agent runs one conversation after another: when a conversation has used its share of
the context (as `bench agents` fits the preset to the engine's max-model-len), the next one
starts with a fresh salt, as an agent starts a new task. Think time is not slept here: the
soak's agents keep the engine busy, and a turn's own tool result is built between turns."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import aiohttp

from sm121.bench.client import BenchClient
from sm121.bench.scenarios.agents.sessions import (
    Conversation,
    ToolSpec,
    Workload,
    fit,
    load_workload,
    piece_counter,
    send,
    tool_definitions,
    tools_as_text,
    tools_mode,
    turns_that_fit,
)
from sm121.bench.scenarios.soak.turn import TurnOutcome
from sm121.engines.client import max_model_len
from sm121.errors import Sm121Error
from sm121.protocols.replies import ToolCall


@dataclass
class AgentSessions:
    preset: str = "coding-agent"
    max_tokens: int | None = None  # None: the preset's own output sizes
    name: str = "coding-agent"
    api: str = "chat"
    _workload: Workload | None = None
    _tools: list[ToolSpec] | None = None
    _tools_text: str = ""
    _per_conversation: int = 1
    _conversations: dict[int, tuple[int, Conversation]] = field(default_factory=dict)

    async def prepare(self, client: BenchClient) -> None:
        """Fit the preset to the engine's context and settle how the tools travel."""
        limit = max_model_len(await client.engine.models(), client.model)
        if not limit:
            raise Sm121Error("the server does not report its max_model_len in /v1/models",
                             "the coding-agent soak fits its sessions to the context; use "
                             "--workload chat-loop for other servers")
        base = load_workload(self.preset)
        self._per_conversation = turns_that_fit(base, limit)
        self._workload = fit(base, limit, self._per_conversation)
        tools = await tool_definitions(piece_counter(client), self._workload)
        mode, _ = await tools_mode(client, self._workload, tools)
        self._tools = tools if mode == "api" else None
        self._tools_text = tools_as_text(tools) if mode == "system_prompt" else ""

    async def step(self, client: BenchClient, agent: int) -> TurnOutcome:
        started = time.monotonic()
        try:
            conversation = await self._conversation(client, agent)
            output, paste, appended, _think = conversation.draw_turn()
            record = await send(client, conversation.request(), self.max_tokens or output,
                                f"soak-agent{agent}-turn{conversation.turn}",
                                conversation.salt, self._tools)
            calls = [ToolCall.model_validate(c) for c in record.tool_calls]
            await conversation.append(piece_counter(client), record.text, calls, appended, paste)
        except (Sm121Error, aiohttp.ClientError, TimeoutError, ValueError) as exc:
            message = exc.message if isinstance(exc, Sm121Error) else repr(exc)
            return TurnOutcome(False, latency_s=time.monotonic() - started, error=message[:300])
        return TurnOutcome(True, record.tokens, record.prompt_tokens or 0,
                           record.cached_tokens, time.monotonic() - started)

    async def _conversation(self, client: BenchClient, agent: int) -> Conversation:
        """The agent's conversation, or its next one once this one has used its turns (a
        failed turn leaves it as it was: the next step sends the same turn again)."""
        if self._workload is None:
            raise RuntimeError("prepare() first")
        current = self._conversations.get(agent)
        if current is not None and current[1].turn < self._per_conversation:
            return current[1]
        number = 0 if current is None else current[0] + 1
        conversation = Conversation(self._workload, f"{client.run_salt}-a{agent}-c{number}",
                                    seed=agent * 1000 + number, tools_in_prompt=self._tools_text)
        await conversation.open(piece_counter(client))
        self._conversations[agent] = (number, conversation)
        return conversation
