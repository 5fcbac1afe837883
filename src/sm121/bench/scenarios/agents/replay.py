"""`replay`: send what the gateway captured again, session by session, in the original order
and with the original inter-arrival gaps (over --speed), measured like `agents` turns.

A redacted capture has no text, only lengths: each redacted message is regenerated as filler
of its character count (the same text every turn it appears in, so the conversation stays
append-only), and the newest message of each request is then sized so the whole prompt has
the captured prompt_tokens exactly. Everything is built before the clock starts.

A captured Anthropic Messages or Responses session is read in its chat form (the messages
vLLM renders, sm121/chat_view.py) and sent again in its own protocol (bench/agents/apis.py),
so it replays as the agent spoke it.
"""

from __future__ import annotations

import asyncio
import time
import zlib
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from sm121.bench.client import BenchClient, StreamRecord
from sm121.bench.prompts import filler
from sm121.bench.runner import Context, run_together
from sm121.bench.scenarios.agents.apis import send_turn
from sm121.bench.scenarios.agents.capture_log import (
    Captured,
    by_session,
    gap_errors,
    is_redacted,
    load_capture,
    redacted_chars,
    schedule,
)
from sm121.bench.scenarios.agents.conversation import exact_text
from sm121.bench.scenarios.agents.messages import ToolSpec, wire
from sm121.bench.scenarios.agents.models import AgentsSummary, read_run
from sm121.bench.scenarios.agents.session import (
    SESSION_HEADER,
    count_request,
    piece_counter,
    turn_record,
)
from sm121.bench.scenarios.agents.slo import DEFAULT_SLO, parse_slo
from sm121.bench.scenarios.agents.summary import summarize_run
from sm121.protocols.chat_view import messages_to_chat, responses_to_chat
from sm121.protocols.replies import ChatMessage
from sm121.protocols.requests import PATHS


@dataclass(frozen=True)
class Prepared:
    """A captured request ready to send: built before the clock starts, so the timed replay
    only waits and sends (the chat form of a Messages or Responses body is made once)."""

    offset: float  # when to send it, from the replay's start
    entry: Captured
    messages: list[ChatMessage]  # in chat form, redacted text regenerated
    tools: list[ToolSpec] | None  # in chat form


def filler_chars(chars: int, seed: int) -> str:
    text = filler(max(1, chars // 4 + 1), seed)
    while len(text) < chars:
        text += " " + filler(max(1, chars // 4), seed + len(text))
    return text[:chars]


class Regenerator:
    """Text for redacted messages, remembered per (session, message index)."""

    def __init__(self, client: BenchClient) -> None:
        self.client = client
        self.texts: dict[tuple[str, int], str] = {}

    async def messages(self, entry: Captured, chat: ChatForm) -> list[ChatMessage]:
        """`chat`: the entry's body in chat form (chat_form); its messages are copied."""
        messages = [m.model_copy(deep=True) for m in chat.messages]
        fresh: list[int] = []
        for index, message in enumerate(messages):
            for call in message.tool_calls or []:
                if is_redacted(call.function.arguments):
                    call.function.arguments = "{}"
            content = message.content
            if not isinstance(content, str) or not is_redacted(content):
                continue
            key = (entry.session, index)
            if key not in self.texts:
                self.texts[key] = filler_chars(redacted_chars(content),
                                              zlib.crc32(f"{entry.session}:{index}".encode()))
                fresh.append(index)
            message.content = self.texts[key]
        if fresh and entry.prompt_tokens:
            largest = max(fresh, key=lambda i: len(messages[i].text))
            await self._fit(entry, messages, chat.tools, largest)
        return messages

    async def _fit(self, entry: Captured, messages: list[ChatMessage],
                   tools: list[ToolSpec] | None, index: int) -> None:
        """Resize the largest message regenerated for this request (seen for the first time,
        so no earlier request holds it) until the prompt has the captured length."""
        count, wanted = piece_counter(self.client), int(entry.prompt_tokens or 0)
        for attempt in range(3):  # template boundaries may shift a token: count again
            counted = await count_request(self.client, messages, tools)
            target = await count(messages[index].text) + wanted - counted
            if counted == wanted or target < 1:
                return
            text = await exact_text(count, target, "", seed=len(self.texts) + attempt)
            self.texts[(entry.session, index)] = messages[index].content = text


def api_of(entry: Captured) -> str | None:
    """messages or responses for a captured Anthropic Messages or Responses request."""
    return next((api for api, path in PATHS.items() if entry.path == path), None)


class ChatForm(BaseModel):
    """What a replay sends of a captured body, in chat form: its messages and tools."""

    messages: list[ChatMessage] = []
    tools: list[ToolSpec] | None = None


def chat_form(entry: Captured) -> ChatForm:
    """The captured body as chat completions (itself for chat and completions)."""
    api = api_of(entry)
    if api is None:
        view = entry.body
    else:
        view = (messages_to_chat if api == "messages" else responses_to_chat)(entry.body) or {}
    return ChatForm(messages=view.get("messages") or [], tools=view.get("tools"))


def _session_header(session: str) -> str:
    return session.split(":", 1)[1] if session[:2] in ("h:", "u:") else session


async def _send(client: BenchClient, prepared: Prepared, label: str) -> StreamRecord:
    entry, messages, body = prepared.entry, prepared.messages, prepared.entry.body
    output = int(entry.completion_tokens or body.get("max_tokens")
                 or body.get("max_output_tokens") or 64)
    headers = {SESSION_HEADER: _session_header(entry.session)}
    extra = {"cache_salt": body["cache_salt"]} if isinstance(body.get("cache_salt"), str) \
        and not is_redacted(body["cache_salt"]) else {}
    api = api_of(entry)
    if api is not None:
        return await send_turn(client, api, messages, output, label, headers, prepared.tools,
                               extra)
    if entry.path.endswith("/chat/completions"):
        return await client.chat(wire(messages), output, label,
                                 tools=wire(prepared.tools or []), headers=headers,
                                 extra=extra)
    prompt = body.get("prompt")
    if not isinstance(prompt, str) or is_redacted(prompt):
        prompt = filler_chars(redacted_chars(str(prompt)) or 200, 7)
    return await client.complete(prompt, output, label, salt=False, extra=extra,
                                 headers=headers)


async def _replay_session(ctx: Context, index: int, items: list[Prepared]) -> None:
    """In order; a request waits for its scheduled time and for its session's previous
    answer (an agent sends its next turn only after the last one ended)."""
    previous: float | None = None
    original_previous: float | None = None
    answered: float | None = None  # when the session's previous request ended (monotonic)
    speed = float(ctx.results.data["params"].get("speed") or 1.0)
    for turn, prepared in enumerate(items):
        offset, entry = prepared.offset, prepared.entry
        # How long the previous answer held this request past its schedule: the engine slower
        # than at capture time, not the replay's timing (a gap error it explains).
        held = 0.0 if answered is None else max(0.0, answered - ctx.t0 - offset)
        delay = ctx.t0 + offset - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        late = max(0.0, time.monotonic() - ctx.t0 - offset)
        record = await _send(ctx.client, prepared, f"{entry.session}-{turn}")
        answered = time.monotonic()
        ctx.add(turn_record(
            record, ctx.t0, agent=index, conversation=0, turn=turn, session=entry.session,
            path=entry.path,
            scheduled_s=round(offset, 6), late_s=round(late, 6), held_s=round(held, 6),
            captured_prompt_tokens=entry.prompt_tokens,
            prompt_exact=entry.prompt_tokens is None or record.prompt_tokens == entry.prompt_tokens,
            wanted_gap_s=None if original_previous is None
            else (entry.arrived - original_previous) / speed,
            replay_gap_s=None if previous is None else record.submitted - previous).to_record())
        previous, original_previous = record.submitted, entry.arrived


class ReplayArgs(BaseModel):
    """What one replay is asked (the params its results file keeps)."""

    model_config = ConfigDict(extra="ignore")

    capture_dir: Path
    speed: float | None = 1.0
    slo: str | None = DEFAULT_SLO


async def replay(ctx: Context, params: ReplayArgs) -> AgentsSummary:
    """The capture sent again; its summary, sessions and how its gaps held."""
    slo = params.slo or DEFAULT_SLO
    parse_slo(slo)
    entries = load_capture(params.capture_dir)
    timed = schedule(entries, float(params.speed or 1.0))
    regen = Regenerator(ctx.client)
    sessions: dict[str, list[Prepared]] = {name: [] for name in by_session(entries)}
    ctx.progress("replay: preparing requests", 0, len(timed))
    for offset, entry in timed:
        chat = chat_form(entry)
        sessions[entry.session].append(
            Prepared(offset, entry, await regen.messages(entry, chat), chat.tools))
    ctx.add({"kind": "config", "workload": {"name": "replay"}, "agents": len(sessions),
             "slo": slo, "api": "as captured", "requests": len(timed),
             "redacted": any(e.redacted for e in entries)})
    ctx.t0 = time.monotonic()
    await run_together(*[_replay_session(ctx, i, items)
                         for i, items in enumerate(sessions.values())])
    run = read_run(ctx.results.data["samples"])
    return summarize_run(run, slo).model_copy(update={
        "sessions": len(sessions), "gaps": gap_errors(run.turns),
        "late_max_s": max((t.late_s for t in run.turns if t.late_s is not None), default=None)})
