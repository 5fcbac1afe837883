"""Streamed replies of Anthropic Messages and the Responses API, assembled whole the way their
SDKs do: tool-use input from `input_json_delta` pieces, function-call arguments from
`response.function_call_arguments.delta` pieces, usage from the events that carry it; and the
tool calls of a whole reply in chat's form. agent-check compares these with the unstreamed
reply; bench's event-by-event reading is protocols/stream_readers.py."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import ValidationError

from sm121.errors import Sm121Error
from sm121.protocols.replies import (
    AnthropicMessage,
    ContentBlock,
    FunctionCall,
    OutputItem,
    ReplyPart,
    ResponseObject,
    ToolCall,
)

Part = TypeVar("Part", bound=ReplyPart)


class MalformedStream(Sm121Error):
    """A stream that does not assemble: an error event, deltas for an item never added,
    tool input that is not JSON."""


@dataclass(frozen=True)
class StreamedMessage:
    """A Messages stream assembled: the reply it stands for, and whether message_stop came."""

    message: AnthropicMessage
    stopped: bool


@dataclass(frozen=True)
class StreamedResponse:
    """A Responses stream assembled: its function calls, and the final response of
    response.completed (or .incomplete), None when none came."""

    calls: list[ToolCall]
    response: ResponseObject | None


def message_tool_uses(content: list[ContentBlock]) -> list[ToolCall]:
    """The tool_use blocks of a Messages reply as chat-style calls (for check_call)."""
    return [ToolCall(id=b.id, function=FunctionCall(name=b.name, arguments=json.dumps(b.input)))
            for b in content if b.type == "tool_use"]


def assemble_messages_stream(events: list[dict[str, Any]]) -> StreamedMessage:
    """A Messages stream as the reply it stands for: content blocks (text, tool_use with its
    input parsed from the joined deltas), stop_reason, usage (input from message_start,
    output from message_delta) and whether message_stop came."""
    blocks: dict[int, dict[str, Any]] = {}
    pieces: dict[int, list[str]] = {}
    reply: dict[str, Any] = {"content": [], "stop_reason": None, "usage": {}}
    stopped = False
    for event in events:
        kind = event.get("type")
        if kind == "message_start":
            reply["usage"].update((event.get("message") or {}).get("usage") or {})
        elif kind == "content_block_start":
            index = int(event.get("index", 0))
            blocks[index] = dict(event.get("content_block") or {})
            pieces[index] = []
        elif kind == "content_block_delta":
            index = int(event.get("index", 0))
            delta = event.get("delta") or {}
            if delta.get("type") == "text_delta":
                blocks.setdefault(index, {"type": "text", "text": ""})
                blocks[index]["text"] = blocks[index].get("text", "") + delta.get("text", "")
            elif delta.get("type") == "input_json_delta":
                pieces.setdefault(index, []).append(str(delta.get("partial_json") or ""))
        elif kind == "message_delta":
            reply["stop_reason"] = (event.get("delta") or {}).get("stop_reason")
            reply["usage"].update(event.get("usage") or {})
        elif kind == "message_stop":
            stopped = True
        elif kind == "error":
            raise MalformedStream(f"the stream reported an error: {str(event)[:300]}")
    for index in sorted(blocks):
        block = blocks[index]
        if block.get("type") == "tool_use":
            joined = "".join(pieces.get(index, []))
            try:
                block["input"] = json.loads(joined) if joined else block.get("input") or {}
            except json.JSONDecodeError as exc:
                raise MalformedStream(f"tool_use input deltas {joined[:120]!r} are not JSON") from exc
        reply["content"].append(block)
    return StreamedMessage(_parsed(AnthropicMessage, reply), stopped)


def _parsed(model: type[Part], data: Any) -> Part:
    """`data` read into `model`; a stream whose pieces do not fit it is malformed."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise MalformedStream(f"the stream does not assemble into a reply: {exc}") from exc


def response_calls(output: list[OutputItem]) -> list[ToolCall]:
    """The function_call items of a Responses output as chat-style calls (for check_call);
    the call_id is what the next turn's function_call_output refers to."""
    return [ToolCall(id=item.call_id,
                     function=FunctionCall(name=item.name, arguments=item.arguments))
            for item in output if item.type == "function_call"]


def assemble_responses_stream(events: list[dict[str, Any]]) -> StreamedResponse:
    """A Responses stream: function calls from their added items and argument deltas (checked
    against the done event's arguments), the final response of response.completed (or
    .incomplete), and whether it came."""
    calls: dict[str, dict[str, Any]] = {}
    final: dict[str, Any] | None = None
    for event in events:
        kind = str(event.get("type") or "")
        if kind == "response.output_item.added":
            item = event.get("item") or {}
            if item.get("type") == "function_call":
                calls[str(item.get("id"))] = {"call_id": item.get("call_id"),
                                              "name": item.get("name"), "arguments": ""}
        elif kind == "response.function_call_arguments.delta":
            call = calls.get(str(event.get("item_id")))
            if call is None:
                raise MalformedStream(f"arguments delta for an item never added: {str(event)[:200]}")
            call["arguments"] += str(event.get("delta") or "")
        elif kind in ("response.completed", "response.incomplete"):
            final = event.get("response") or {}
        elif kind in ("error", "response.failed"):
            raise MalformedStream(f"the stream reported an error: {str(event)[:300]}")
    assembled = [_parsed(ToolCall, {"id": c["call_id"], "type": "function",
                                    "function": {"name": c["name"], "arguments": c["arguments"]}})
                 for c in calls.values()]
    return StreamedResponse(assembled,
                            None if final is None else _parsed(ResponseObject, final))


def assemble_chat_tool_calls(chunks: list[dict[str, Any]]) -> list[ToolCall]:
    """Tool-call deltas of a chat stream, joined per index the way the openai SDK does:
    id and name arrive once, arguments arrive in pieces (bench's event-by-event reading is
    stream_readers.merge_tool_calls)."""
    calls: dict[int, dict[str, Any]] = {}
    for chunk in chunks:
        for choice in chunk.get("choices") or []:
            for delta in (choice.get("delta") or {}).get("tool_calls") or []:
                call = calls.setdefault(int(delta.get("index", 0)),
                                        {"id": None, "type": "function",
                                         "function": {"name": None, "arguments": ""}})
                call["id"] = call["id"] or delta.get("id")
                function = delta.get("function") or {}
                call["function"]["name"] = call["function"]["name"] or function.get("name")
                call["function"]["arguments"] += function.get("arguments") or ""
    return [_parsed(ToolCall, calls[i]) for i in sorted(calls)]

