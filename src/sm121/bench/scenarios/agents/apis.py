"""An agent turn over Anthropic Messages or the Responses API, the same workload as chat.

The conversation is kept in chat form (bench/agents/conversation.py); each turn is sent in the
protocol's own shape (protocols/requests.py builds it so that vLLM renders the same chat
prompt, so usage is checked against the chat /tokenize count) and read back into the
chat-shaped record the agents scenario keeps (protocols/stream_readers.py: text, tool calls
with ids, usage in chat's names, events checked against usage). Here is only the sending.
Messages has no ignore_eos in vLLM: its replies may end before the asked length.
"""

from __future__ import annotations

import time

from sm121.bench.client import BenchClient, StreamRecord
from sm121.bench.scenarios.agents.messages import ToolSpec, wire
from sm121.errors import Sm121Error
from sm121.protocols.replies import ChatMessage
from sm121.protocols.requests import BUILDERS
from sm121.protocols.routes import route_of
from sm121.protocols.stream_readers import reader_for


def check_api(scenario: str, api: str | None) -> None:
    """Messages and Responses carry an agent's conversation (the agents scenario); the other
    scenarios measure prompts over chat or completions."""
    if api is not None and api not in ("chat", "completions", *BUILDERS):
        raise Sm121Error(f"unknown --api {api!r}", "chat, completions, messages or responses")
    if api in BUILDERS and scenario != "agents":
        raise Sm121Error(f"--api {api} is for the agents scenario, not {scenario}",
                         "use --api chat or --api completions here")


async def send_turn(client: BenchClient, api: str, messages: list[ChatMessage], output: int,
                    label: str, headers: dict[str, str], tools: list[ToolSpec] | None,
                    extra: dict[str, str] | None = None) -> StreamRecord:
    """One streamed turn over `api` (messages or responses); `extra` joins the body (vLLM's
    cache_salt, which both take)."""
    body = {**BUILDERS[api](client.model, wire(messages), output, wire(tools or [])),
            **(extra or {}), "stream": True}
    record = StreamRecord(label=label, submitted=time.monotonic())
    record.prompt_chars = sum(len(m.text) for m in messages)
    reader = reader_for(api, record)
    await client.stream_events(route_of(api), body, record, headers, reader.take_data)
    reader.finish()
    return record
