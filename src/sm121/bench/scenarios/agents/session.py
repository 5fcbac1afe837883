"""Running agent sessions: each on its own clock (think time, then its next turn), each turn
recorded as it ends; and the background batch job beside them."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sm121.bench.client import BenchClient, StreamRecord
from sm121.bench.prompts import Counter, count_tokens
from sm121.bench.scenarios.agents.apis import send_turn
from sm121.bench.scenarios.agents.conversation import Conversation, exact_text, flat_prompt
from sm121.bench.scenarios.agents.messages import ToolSpec, user, wire
from sm121.bench.scenarios.agents.models import TurnSample
from sm121.bench.scenarios.agents.workload import Workload, turns_that_fit
from sm121.bench.stats import inter_token_intervals, percentile
from sm121.protocols.replies import ChatMessage, ToolCall

QUEUE_WAIT_HEADER = "X-Sm121-Queue-Wait"
SESSION_WAIT_HEADER = "X-Sm121-Session-Wait"  # the gateway's session admission wait
SESSION_HEADER = "x-session-id"
Record = Callable[[TurnSample], None]


def piece_counter(client: BenchClient) -> Counter:
    async def count(text: str) -> int:
        return await count_tokens(client, text, special=False)

    return count


@dataclass
class RunPlan:
    """What every session of one run shares."""

    client: BenchClient
    workload: Workload
    t0: float
    tools: list[ToolSpec] | None  # sent as the request's `tools`, or None
    turns: int | None  # --turns, or None with a deadline
    deadline: float | None  # monotonic, with --duration
    record: Record
    first_turns: asyncio.Event = field(default_factory=asyncio.Event)
    agents: int = 1
    _firsts: int = 0

    def first_turn_done(self) -> None:
        self._firsts += 1
        if self._firsts >= self.agents:
            self.first_turns.set()

    def more(self, turns_done: int) -> bool:
        if self.turns is not None:
            return turns_done < self.turns
        return self.deadline is not None and time.monotonic() < self.deadline


@dataclass(frozen=True)
class Decode:
    """Decode tok/s after the first token, and the p50/p95 intervals between tokens."""

    decode_tok_s: float | None = None
    itl_p50_s: float | None = None
    itl_p95_s: float | None = None


def decode_metrics(record: StreamRecord) -> Decode:
    """Decode speed and per-token intervals, from the stream's token ids."""
    points = [(t, n) for t, n in zip(record.chunk_times, record.chunk_tokens, strict=True)
              if n > 0]
    if len(points) < 2:
        return Decode()
    times, tokens = [p[0] for p in points], [p[1] for p in points]
    span = times[-1] - times[0]
    intervals = inter_token_intervals(times, tokens)
    return Decode((sum(tokens) - tokens[0]) / span if span > 0 else None,
                  percentile(intervals, 50), percentile(intervals, 95))


def turn_record(record: StreamRecord, t0: float, kind: str = "turn", **fields: Any
                ) -> TurnSample:
    """One turn as the results file keeps it (times relative to the run's t0); `fields` are
    the caller's own (agent, turn, a replay's schedule, ...)."""
    prompt = record.prompt_tokens
    cached = record.cached_tokens
    wait = record.headers.get(QUEUE_WAIT_HEADER)
    session_wait = record.headers.get(SESSION_WAIT_HEADER)
    # Messages and Responses streams carry no token ids: their events checked against usage
    events_match = (record.usage or {}).get("events_match_usage")
    # A Messages or Responses stream whose events are not one per token (pieces with no
    # text of their own are not sent) times its first token, not its decode.
    decode = decode_metrics(record) if events_match is not False else Decode()
    return TurnSample.model_validate({
        "kind": kind, **fields,
        "submitted": round(record.submitted - t0, 6),
        "first_token": None if record.first_token is None else round(record.first_token - t0, 6),
        "finished": None if record.finished is None else round(record.finished - t0, 6),
        "ttft_s": record.ttft,
        "e2e_s": None if record.finished is None else record.finished - record.submitted,
        "completion_tokens": record.tokens, "usage_checked": True,
        "events_match_usage": events_match,
        "prompt_tokens": prompt, "cached_tokens": cached,
        "reuse": cached / prompt if prompt and cached is not None else None,
        "queue_wait_s": float(wait) if wait else None,
        "session_wait_s": float(session_wait) if session_wait else None,
        "finish_reason": record.finish_reason,
        "decode_tok_s": decode.decode_tok_s, "itl_p50_s": decode.itl_p50_s,
        "itl_p95_s": decode.itl_p95_s,
    })


async def count_request(client: BenchClient, messages: list[ChatMessage],
                        tools: list[ToolSpec] | None) -> int:
    """The prompt's tokens as the server will see it: /tokenize with the chat template (or
    the flattened prompt over completions). Messages and Responses turns are built so that
    vLLM renders the same chat prompt (bench/agents/apis.py): the chat count is theirs too."""
    if client.api == "completions":
        return await count_tokens(client, flat_prompt(messages))
    body: dict[str, Any] = {"model": client.model, "messages": wire(messages),
                            "add_generation_prompt": True}
    if tools:
        body["tools"] = wire(tools)
    return int((await client.engine.tokenize(body))["count"])


async def send(client: BenchClient, messages: list[ChatMessage], output: int, label: str,
               salt: str, tools: list[ToolSpec] | None) -> StreamRecord:
    """One turn over the client's API, keyed to its session (gateway) and cache salt."""
    headers, extra = {SESSION_HEADER: salt}, client.cache_salt_field(salt)
    if client.api in ("messages", "responses"):
        return await send_turn(client, client.api, messages, output, label, headers, tools,
                               extra)
    if client.api == "chat":
        return await client.chat(wire(messages), output, label, tools=wire(tools or []),
                                 headers=headers, extra=extra)
    return await client.complete(flat_prompt(messages), output, label, salt=False,
                                 extra=extra, headers=headers)


async def open_conversation(plan: RunPlan, agent: int, conversation: int,
                            tools_text: str) -> Conversation:
    salt = f"{plan.client.run_salt}-a{agent}-c{conversation}"
    conv = Conversation(plan.workload, salt, seed=agent * 1000 + conversation,
                        tools_in_prompt=tools_text)
    await conv.open(piece_counter(plan.client))
    return conv


async def run_session(plan: RunPlan, agent: int, first: Conversation, tools_text: str,
                      start_delay_s: float = 0.0) -> None:
    """Turns until --turns or the deadline; a conversation that fills its context share is
    followed by a fresh one (a new salt), as an agent starts a new task. `start_delay_s`:
    when its first turn goes, after the run's start (--session-start stagger)."""
    if start_delay_s > 0:
        await asyncio.sleep(start_delay_s)
    conv, conversation, done = first, 0, 0
    fitted = plan.workload.fitted
    if fitted is None:
        raise ValueError("a session's workload is fitted to the server first (workload.fit)")
    per_conversation = plan.turns or turns_that_fit(plan.workload, fitted.max_model_len)
    while plan.more(done):
        if conv.turn >= per_conversation:
            conversation += 1
            conv = await open_conversation(plan, agent, conversation, tools_text)
        think = await _turn(plan, agent, conversation, conv)
        if done == 0:
            plan.first_turn_done()
        done += 1
        if plan.more(done):
            await asyncio.sleep(think)
    if done == 0:
        plan.first_turn_done()


async def _turn(plan: RunPlan, agent: int, conversation: int, conv: Conversation) -> float:
    """One turn, recorded; returns the think time left before the next one (building the
    next tool result counts as part of it)."""
    client, messages = plan.client, conv.request()
    expected = await count_request(client, messages, plan.tools)
    output, paste, appended, think = conv.draw_turn()
    cpu, wall = time.process_time(), time.monotonic()
    record = await send(client, messages, output, f"agent{agent}-turn{conv.turn}", conv.salt,
                        plan.tools)
    cpu, wall = time.process_time() - cpu, time.monotonic() - wall
    row = turn_record(record, plan.t0, agent=agent, conversation=conversation, turn=conv.turn,
                      expected_prompt_tokens=expected, output_asked=output,
                      prompt_exact=record.prompt_tokens == expected,
                      tool_calls=len(record.tool_calls), paste=conv.last_paste,
                      client_cpu_s=round(cpu, 6),
                      client_cpu_share=round(cpu / wall, 4) if wall > 0 else None)
    plan.record(row)
    ended = time.monotonic()
    calls = [ToolCall.model_validate(c) for c in record.tool_calls]
    await conv.append(piece_counter(client), record.text, calls, appended, paste)
    return max(0.0, think - (time.monotonic() - ended))


async def background_prompt(client: BenchClient, tokens: int) -> tuple[str, str]:
    """(tag, text): the background job's prompt, exact and salted of its own."""
    tag = client.new_salt()
    return tag, await exact_text(piece_counter(client), tokens, f"[batch {tag}]\n", seed=99)


async def run_background(plan: RunPlan, prompt: tuple[str, str], output: int,
                         delay_s: float) -> None:
    """One long prefill, sent once every agent finished its first turn (plus a delay)."""
    client, (tag, text) = plan.client, prompt
    messages = [user(text)]
    await plan.first_turns.wait()
    await asyncio.sleep(delay_s)
    record = await send(client, messages, output, "background", f"batch-{tag}", None)
    plan.record(turn_record(record, plan.t0, "background", agent=-1, conversation=0, turn=0,
                            expected_prompt_tokens=None))
