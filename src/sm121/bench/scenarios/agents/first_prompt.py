"""A session's first prompt as the engine renders it: the system prompt, the tools and the
task built the way an agents run builds them (tool_definitions, Conversation.open), counted by
the engine's /tokenize with the chat template (the engine client renders it where /tokenize
takes only text). The workload's sizes leave the template's part out: the tools' JSON
schemas, role markers; on a 20-tool preset that is about 2.5K tokens. The capacity model's
working set starts here (capacity.load_shape)."""

from __future__ import annotations

from sm121.bench.client import BenchClient
from sm121.bench.runner import resolve_model
from sm121.bench.scenarios.agents.conversation import (
    Conversation,
    tool_definitions,
    tools_as_text,
)
from sm121.bench.scenarios.agents.messages import wire
from sm121.bench.scenarios.agents.session import piece_counter
from sm121.bench.scenarios.agents.workload import Workload, fit_to_server, load_workload


async def rendered_first_prompt(client: BenchClient, workload: Workload) -> int:
    """Tokens of a fitted workload's first request as the engine renders it. The tools travel
    as `tools` unless the workload places them in the system prompt (a run whose server
    refuses `tools` moves them there too; counted this way, the template's rendering of them
    is near the same)."""
    count = piece_counter(client)
    tools = await tool_definitions(count, workload)
    in_prompt = workload.tools.placement == "system_prompt"
    conv = Conversation(workload, "first-prompt", seed=0,
                        tools_in_prompt=tools_as_text(tools) if in_prompt and tools else "")
    await conv.open(count)
    body = {"model": client.model, "messages": wire(conv.request()),
            "add_generation_prompt": True}
    if tools and not in_prompt:
        body["tools"] = wire(tools)
    return int((await client.engine.tokenize(body))["count"])


async def first_prompt_at(url: str, workload: str, turns: int, max_model_len: int) -> int:
    """rendered_first_prompt of a preset (or YAML file) fitted as a run of `turns` turns
    sends it, through the engine at `url`."""
    fitted = fit_to_server(load_workload(workload), max_model_len, turns)
    async with BenchClient(url, await resolve_model(url, None), api="chat") as client:
        return await rendered_first_prompt(client, fitted)
