"""An agent turn over Anthropic Messages or the Responses API, the same workload as chat.

The conversation is kept in chat form (bench/agents/conversation.py); each turn is sent in the
protocol's own shape, built so that vLLM converts it back to the same chat messages: the
prompt the engine renders is the chat prompt token for token, so the chat /tokenize count is
the expected prompt of every protocol (and usage is checked against it). Replies are read back
into the chat-shaped record the agents scenario keeps: text, tool calls (with ids, for the
next turn), usage (Anthropic's input counted with its cache hits, as chat's prompt_tokens).

These streams carry no token ids: each content event is timed, the output is counted from
usage, and the events are checked against that count (`events_match_usage`). vLLM sends one
event per decoded piece and none for a token with no text of its own (on the tiny CPU model 28
events for 30 tokens on Messages, 17 on Responses): then the turn keeps its TTFT (the first
event) and its token count, but no decode rate or inter-token intervals, which would be
guesses. Messages has no ignore_eos in vLLM: its replies may end before the asked length.
"""

from __future__ import annotations

import json
import time
from typing import Any

from sm121.bench.client import BenchClient, StreamRecord
from sm121.errors import Sm121Error
from sm121.usage_tokens import is_count, prompt_tokens

PATHS = {"messages": "/v1/messages", "responses": "/v1/responses"}


def check_api(scenario: str, api: str | None) -> None:
    """Messages and Responses carry an agent's conversation (the agents scenario); the other
    scenarios measure prompts over chat or completions."""
    if api is not None and api not in ("chat", "completions", *PATHS):
        raise Sm121Error(f"unknown --api {api!r}", "chat, completions, messages or responses")
    if api in PATHS and scenario != "agents":
        raise Sm121Error(f"--api {api} is for the agents scenario, not {scenario}",
                         "use --api chat or --api completions here")


def messages_body(model: str, messages: list[dict[str, Any]], output: int,
                  tools: list[dict[str, Any]] | None) -> dict[str, Any]:
    system = [str(m.get("content") or "") for m in messages if m.get("role") == "system"]
    body: dict[str, Any] = {"model": model, "max_tokens": output, "temperature": 0,
                            "messages": _anthropic_messages(
                                [m for m in messages if m.get("role") != "system"])}
    if system:
        body["system"] = "".join(system)
    if tools:
        body["tools"] = [{"name": t["function"]["name"],
                          "description": t["function"].get("description", ""),
                          "input_schema": t["function"].get("parameters") or {}}
                         for t in tools]
    return body


def _anthropic_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for m in messages:
        role = m.get("role")
        if role == "tool":
            block = {"type": "tool_result", "tool_use_id": m.get("tool_call_id") or "",
                     "content": str(m.get("content") or "")}
            if out and out[-1]["role"] == "user" and isinstance(out[-1]["content"], list):
                out[-1]["content"].append(block)  # parallel results: one user turn
            else:
                out.append({"role": "user", "content": [block]})
        elif role == "assistant" and m.get("tool_calls"):
            blocks: list[dict[str, Any]] = []
            if m.get("content"):
                blocks.append({"type": "text", "text": str(m["content"])})
            for call in m["tool_calls"]:
                blocks.append({"type": "tool_use", "id": call.get("id") or "",
                               "name": call["function"]["name"],
                               "input": _arguments(call["function"].get("arguments"))})
            out.append({"role": "assistant", "content": blocks})
        else:
            out.append({"role": role, "content": str(m.get("content") or "")})
    return out


def _arguments(raw: Any) -> Any:
    try:
        value = json.loads(raw) if isinstance(raw, str) else raw
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def responses_body(model: str, messages: list[dict[str, Any]], output: int,
                   tools: list[dict[str, Any]] | None) -> dict[str, Any]:
    items: list[dict[str, Any]] = []
    for m in messages:
        if m.get("role") == "tool":
            items.append({"type": "function_call_output", "call_id": m.get("tool_call_id"),
                          "output": str(m.get("content") or "")})
            continue
        if m.get("content") or not m.get("tool_calls"):
            items.append({"role": m["role"], "content": str(m.get("content") or "")})
        for call in m.get("tool_calls") or []:
            items.append({"type": "function_call", "call_id": call.get("id") or "",
                          "name": call["function"]["name"],
                          "arguments": call["function"].get("arguments") or "{}"})
    body: dict[str, Any] = {"model": model, "input": items, "max_output_tokens": output,
                            "temperature": 0, "ignore_eos": True}
    if tools:
        body["tools"] = [{"type": "function", **t["function"]} for t in tools]
    return body


async def send_turn(client: BenchClient, api: str, messages: list[dict[str, Any]], output: int,
                    label: str, headers: dict[str, str],
                    tools: list[dict[str, Any]] | None,
                    extra: dict[str, Any] | None = None) -> StreamRecord:
    """One streamed turn over `api` (messages or responses); `extra` joins the body (vLLM's
    cache_salt, which both take)."""
    build = messages_body if api == "messages" else responses_body
    body = {**build(client.model, messages, output, tools), **(extra or {}), "stream": True}
    record = StreamRecord(label=label, submitted=time.monotonic())
    record.prompt_chars = sum(len(str(m.get("content") or "")) for m in messages)
    reader = _MessagesReader(record) if api == "messages" else _ResponsesReader(record)
    await client.stream_events(PATHS[api], body, record, headers,
                               lambda data, now: reader.take(_decoded(data, label), now))
    reader.finish()
    return record


def _decoded(data: str, label: str) -> dict[str, Any]:
    try:
        payload = json.loads(data)
    except json.JSONDecodeError as exc:
        raise Sm121Error(f"{label}: a stream event is not JSON: {data[:200]!r}",
                         "is the endpoint vLLM (or a gateway in front of it)?") from exc
    if not isinstance(payload, dict):
        return {}
    if payload.get("type") in ("error", "response.failed"):
        raise Sm121Error(f"{label}: the server reported an error mid-stream: "
                         f"{json.dumps(payload)[:300]}")
    return payload


class _Reader:
    def __init__(self, record: StreamRecord) -> None:
        self.record = record
        self.output_tokens: int | None = None

    def timed(self, now: float) -> None:
        self.record.chunk_times.append(now)
        self.record.chunk_tokens.append(1)

    def finish(self) -> None:
        """Tokens from usage; the events are checked against them (see the module note)."""
        record = self.record
        if self.output_tokens is None or record.usage is None:
            raise Sm121Error(f"{record.label}: the stream ended without usage",
                             "a server that sends no usage cannot be measured safely")
        events = len(record.chunk_tokens)
        record.usage["events_match_usage"] = events == self.output_tokens
        if events > self.output_tokens:
            raise Sm121Error(f"{record.label}: {events} content events but usage says "
                             f"{self.output_tokens} tokens", "the stream is not one event "
                             "per decoded piece; do not trust its timings")
        if events:
            record.chunk_tokens[-1] += self.output_tokens - events
        else:
            record.chunk_times, record.chunk_tokens = [record.finished or 0.0], [
                self.output_tokens]


class _MessagesReader(_Reader):
    def take(self, event: dict[str, Any], now: float) -> None:
        kind, record = event.get("type"), self.record
        if kind == "message_start":
            self._usage((event.get("message") or {}).get("usage") or {})
        elif kind == "content_block_start":
            block = event.get("content_block") or {}
            if block.get("type") == "tool_use":
                record.tool_calls.append({"id": block.get("id"), "type": "function",
                                          "function": {"name": block.get("name") or "",
                                                       "arguments": ""}})
        elif kind == "content_block_delta":
            delta = event.get("delta") or {}
            if delta.get("type") == "text_delta":
                record.text += delta.get("text") or ""
            elif delta.get("type") == "input_json_delta" and record.tool_calls:
                record.tool_calls[-1]["function"]["arguments"] += delta.get("partial_json") or ""
            self.timed(now)
        elif kind == "message_delta":
            record.finish_reason = (event.get("delta") or {}).get("stop_reason")
            self._usage(event.get("usage") or {})

    def _usage(self, usage: dict[str, Any]) -> None:
        if not usage:
            return
        # An engine that leaves cache_read_input_tokens out (vLLM 0.21's Messages) has said
        # nothing of its prefix cache: None, so reuse reads "not reported", not 0%.
        read = usage.get("cache_read_input_tokens")
        cached = read if is_count(read) else None
        prompt = prompt_tokens(usage) or 0
        previous = self.record.usage or {}
        if prompt or not previous:
            self.record.usage = {"prompt_tokens": prompt,
                                 "prompt_tokens_details": {"cached_tokens": cached}}
        else:
            self.record.usage = previous
        if usage.get("output_tokens") is not None:
            self.output_tokens = int(usage["output_tokens"])
            self.record.usage["completion_tokens"] = self.output_tokens


class _ResponsesReader(_Reader):
    def take(self, event: dict[str, Any], now: float) -> None:
        kind, record = str(event.get("type") or ""), self.record
        if kind == "response.output_text.delta":
            record.text += str(event.get("delta") or "")
            self.timed(now)
        elif kind == "response.output_item.added":
            item = event.get("item") or {}
            if item.get("type") == "function_call":
                record.tool_calls.append({"id": item.get("call_id"), "type": "function",
                                          "function": {"name": item.get("name") or "",
                                                       "arguments": ""}})
        elif kind == "response.function_call_arguments.delta" and record.tool_calls:
            record.tool_calls[-1]["function"]["arguments"] += str(event.get("delta") or "")
            self.timed(now)
        elif kind in ("response.completed", "response.incomplete"):
            final = event.get("response") or {}
            usage = final.get("usage") or {}
            details = usage.get("input_tokens_details") or {}
            self.output_tokens = int(usage.get("output_tokens") or 0)
            record.usage = {"prompt_tokens": usage.get("input_tokens"),
                            "completion_tokens": self.output_tokens,
                            "prompt_tokens_details": {
                                "cached_tokens": details.get("cached_tokens")}}
            record.finish_reason = ("length" if final.get("status") == "incomplete"
                                    else "stop")
