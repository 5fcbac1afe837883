"""Reading a streamed reply event by event, per protocol, into one chat-shaped record: text,
tool calls (assembled from their pieces, with ids for the next turn), usage (in chat's names),
finish reason, and when each content event came with how many tokens it carried.

- chat and completions (`take_chat_event`; `take_chat_reply` for an unstreamed reply): every
  chunk carries its token ids (vLLM's `return_token_ids`), so tokens are counted, never
  chunks (protocols/token_ids.py); tool calls come in pieces keyed by index
  (`merge_tool_calls`).
- Messages and Responses (`MessagesReader`, `ResponsesReader`): these streams carry no token
  ids, so each content event is timed, the output is counted from usage, and the events are
  checked against that count (`events_match_usage`). vLLM sends one event per decoded piece
  and none for a token with no text of its own (on the tiny CPU model 28 events for 30 tokens
  on Messages, 17 on Responses): then a turn keeps its TTFT (the first event) and its token
  count, but no decode rate or inter-token intervals, which would be guesses.

The record is whatever has these fields (bench's StreamRecord): the reading is the protocol's,
the timing and sending are the client's.
"""

from __future__ import annotations

import json
from typing import Any, Protocol

from sm121.errors import Sm121Error
from sm121.protocols.token_ids import chunk_tokens
from sm121.protocols.usage import is_count, prompt_tokens


class ReplyRecord(Protocol):
    """What a reader fills: the fields of bench's StreamRecord it writes."""

    label: str
    finished: float | None
    usage: dict[str, Any] | None
    finish_reason: str | None
    text: str
    tool_calls: list[dict[str, Any]]
    chunk_times: list[float]
    chunk_tokens: list[int]


def take_chat_event(data: str, now: float, record: ReplyRecord) -> None:
    """One chat or completions chunk (`data: [DONE]` and blank data are skipped)."""
    if data == "[DONE]" or not data.strip():
        return
    payload = json.loads(data)
    if "error" in payload:
        raise Sm121Error(f"{record.label}: the server reported an error mid-stream: "
                         f"{json.dumps(payload['error'])[:300]}")
    if payload.get("usage"):
        record.usage = payload["usage"]
    tokens = chunk_tokens(payload, counted=sum(record.chunk_tokens))
    for choice in payload.get("choices") or []:
        delta = choice.get("delta") or {}
        record.text += choice.get("text") or delta.get("content") or ""
        merge_tool_calls(record.tool_calls, delta.get("tool_calls") or [])
        record.finish_reason = choice.get("finish_reason") or record.finish_reason
    if payload.get("choices"):
        record.chunk_times.append(now)
        record.chunk_tokens.append(tokens)
    elif tokens and record.chunk_tokens:
        record.chunk_tokens[-1] += tokens  # counted only by the final chunk (token_ids.py)


def take_chat_reply(payload: dict[str, Any], record: ReplyRecord) -> int | None:
    """A whole (unstreamed) chat or completions reply: its text, tool calls, usage and finish
    reason go on `record`; the token ids of its first choice, counted (None: it carries none,
    so only usage can count it)."""
    record.usage = payload.get("usage")
    choice = (payload.get("choices") or [{}])[0]
    message = choice.get("message") or {}
    record.text = choice.get("text") or message.get("content") or ""
    record.tool_calls = list(message.get("tool_calls") or [])
    record.finish_reason = choice.get("finish_reason")
    return len(choice["token_ids"]) if choice.get("token_ids") is not None else None


def merge_tool_calls(calls: list[dict[str, Any]], deltas: list[dict[str, Any]]) -> None:
    """Streamed chat tool calls come in pieces keyed by index: the first names the function,
    the rest append to its arguments."""
    for piece in deltas:
        index = int(piece.get("index", len(calls)))
        while len(calls) <= index:
            calls.append({"id": None, "type": "function",
                          "function": {"name": "", "arguments": ""}})
        call, function = calls[index], piece.get("function") or {}
        call["id"] = piece.get("id") or call["id"]
        call["function"]["name"] += function.get("name") or ""
        call["function"]["arguments"] += function.get("arguments") or ""


def decode_event(data: str, label: str) -> dict[str, Any]:
    """A Messages or Responses event's JSON; an error event raises, naming what it said."""
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


class EventReader:
    """The common part of the Messages and Responses readers: timing content events and, at
    the end, the token count from usage (see the module note)."""

    def __init__(self, record: ReplyRecord) -> None:
        self.record = record
        self.output_tokens: int | None = None

    def take_data(self, data: str, now: float) -> None:
        self.take(decode_event(data, self.record.label), now)

    def take(self, event: dict[str, Any], now: float) -> None:
        raise NotImplementedError

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


class MessagesReader(EventReader):
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


class ResponsesReader(EventReader):
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


READERS: dict[str, type[EventReader]] = {"messages": MessagesReader,
                                         "responses": ResponsesReader}


def reader_for(api: str, record: ReplyRecord) -> EventReader:
    """The event reader of `api` (messages or responses) filling `record`."""
    return READERS[api](record)
