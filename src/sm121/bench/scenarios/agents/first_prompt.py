"""A session's first prompt as the engine renders it: the system prompt, the tools and the
task built the way an agents run builds them (tool_definitions, Conversation.open), counted by
the engine's /tokenize with the chat template (the engine client renders it where /tokenize
takes only text). The workload's sizes leave the template's part out: the tools' JSON
schemas, role markers; on a 20-tool preset that is about 2.5K tokens. The capacity model's
working set starts here (capacity.load_shape), and grows by the
template's tokens a turn counted the same way."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import aiohttp

from sm121.bench.client import BenchClient
from sm121.bench.prompts import filler
from sm121.bench.runner import resolve_model
from sm121.bench.scenarios.agents.conversation import (
    Conversation,
    tool_definitions,
    tools_as_text,
)
from sm121.bench.scenarios.agents.messages import wire
from sm121.bench.scenarios.agents.session import piece_counter
from sm121.bench.scenarios.agents.workload import Workload, fit_to_server, load_workload
from sm121.errors import Sm121Error
from sm121.protocols.replies import ChatMessage

# What an engine that cannot count the first prompt raises: no /tokenize (an EngineError,
# an Sm121Error), a connection that fails (aiohttp, OSError and its TimeoutError), an answer
# without a count (KeyError, ValueError).
NOT_COUNTED = (Sm121Error, aiohttp.ClientError, OSError, KeyError, ValueError)


@dataclass(frozen=True)
class RenderedSession:
    """A session as the engine renders it: its first prompt, and the template's tokens one
    turn adds beside its reply's and tool result's own (role markers, turn ends)."""

    first_prompt_tokens: int
    turn_template_tokens: int

    def source(self, where: str) -> str:
        return (f"as {where} renders it (system prompt, tools, task; "
                f"{self.turn_template_tokens} template tokens a turn)")


async def rendered_session(client: BenchClient, workload: Workload) -> RenderedSession:
    """A fitted workload's first request as the engine renders it, and what one more turn
    (an assistant reply and a tool result, as the run appends them) adds beyond their text.
    The tools travel as `tools` unless the workload places them in the system prompt (a run
    whose server refuses `tools` moves them there too)."""
    count = piece_counter(client)
    tools = await tool_definitions(count, workload)
    in_prompt = workload.tools.placement == "system_prompt"
    conv = Conversation(workload, "first-prompt", seed=0,
                        tools_in_prompt=tools_as_text(tools) if in_prompt and tools else "")
    await conv.open(count)

    async def rendered(messages: list[ChatMessage]) -> int:
        body = {"model": client.model, "messages": wire(messages),
                "add_generation_prompt": True}
        if tools and not in_prompt:
            body["tools"] = wire(tools)
        return int((await client.engine.tokenize(body))["count"])

    first = await rendered(conv.request())
    reply, result = filler(40, 1), "Tool output:\n" + filler(80, 2)
    turned = await rendered([*conv.request(), ChatMessage(role="assistant", content=reply),
                             ChatMessage(role="user", content=result)])
    template = turned - first - await count(reply) - await count(result)
    return RenderedSession(first, max(0, template))


async def rendered_at(url: str, workload: str, turns: int,
                      max_model_len: int) -> RenderedSession:
    """rendered_session of a preset (or YAML file) fitted as a run of `turns` turns sends
    it, through the engine at `url`."""
    fitted = fit_to_server(load_workload(workload), max_model_len, turns)
    async with BenchClient(url, await resolve_model(url, None), api="chat") as client:
        return await rendered_session(client, fitted)


def rendered_or_why(url: str, workload: str, turns: int,
                    max_model_len: int) -> RenderedSession | str:
    """rendered_at, run to its end; where the engine does not count it, why (one line, for
    the prediction's working set: the longest session then, capacity.NOMINAL_PREFIX). Not
    from inside a running event loop."""
    try:
        return asyncio.run(rendered_at(url, workload, turns, max_model_len))
    except NOT_COUNTED as exc:
        why = getattr(exc, "message", None) or str(exc) or type(exc).__name__
        return why.splitlines()[0][:200] if why.strip() else type(exc).__name__
