"""Request bodies of an agent turn over Anthropic Messages or the Responses API, built from a
conversation kept in chat form (bench agents, bench replay).

Each is built so that vLLM converts it back to the same chat messages: the prompt the engine
renders is the chat prompt token for token, so the chat /tokenize count is the expected prompt
of every protocol. Tool calls keep their ids (a tool_use id, a call_id), so the next turn's
tool results refer to them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from sm121.protocols.routes import MESSAGES, RESPONSES

Messages = list[dict[str, Any]]
Tools = list[dict[str, Any]] | None
BodyBuilder = Callable[[str, Messages, int, Tools], dict[str, Any]]

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


# The protocols a chat-form conversation is sent again in (chat itself needs no rebuilding).
PATHS = {"messages": MESSAGES.route, "responses": RESPONSES.route}
BUILDERS: dict[str, BodyBuilder] = {"messages": messages_body, "responses": responses_body}
