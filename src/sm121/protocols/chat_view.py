"""A Messages or Responses request's prompt in chat-completions form: what the engine renders
through the same chat template, so the engine's own /tokenize counts it (the context check,
the long-prompt lane) and the locality watch compares it turn by turn.

The conversion follows vLLM's own (entrypoints/anthropic/serving.py `to_chat_completion_request`
and the Responses input items): `system` first, text blocks as content, `tool_use` blocks as
the assistant's tool_calls, `tool_result` blocks as tool messages, Anthropic tools (name,
input_schema) as function tools. A request with something the view cannot express (an item
type it does not know) gets None: the engine still checks the request itself, and the gateway
counts the skip, so it is never silent.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from sm121.errors import Sm121Error

_PASSED = ("model", "chat_template_kwargs")


class NoView(Sm121Error):
    """The request holds a part that has no chat-completions form (caught inside this
    module: the caller gets None)."""


def messages_to_chat(body: Mapping[str, Any]) -> dict[str, Any] | None:
    """An Anthropic Messages body (or a count_tokens body) as a chat-completions body."""
    messages = body.get("messages")
    if not isinstance(messages, list):
        return None
    try:
        chat: list[dict[str, Any]] = []
        system = _system_text(body.get("system"))
        if system:
            chat.append({"role": "system", "content": system})
        for message in messages:
            chat.extend(_anthropic_message(message))
        return _view(body, chat, _anthropic_tool)
    except NoView:
        return None


def responses_to_chat(body: Mapping[str, Any]) -> dict[str, Any] | None:
    """A Responses body (instructions, input string or items, flat function tools)."""
    given = body.get("input")
    try:
        chat: list[dict[str, Any]] = []
        instructions = body.get("instructions")
        if isinstance(instructions, str) and instructions:
            chat.append({"role": "system", "content": instructions})
        if isinstance(given, str):
            chat.append({"role": "user", "content": given})
        elif isinstance(given, list):
            for item in given:
                _responses_item(item, chat)
        else:
            return None
        return _view(body, chat, _responses_tool)
    except NoView:
        return None


def _view(body: Mapping[str, Any], messages: list[dict[str, Any]],
          tool: Callable[[Any], dict[str, Any]]) -> dict[str, Any]:
    """The chat body: the passed-through fields, the messages, and the tools in chat's form."""
    view: dict[str, Any] = {k: body[k] for k in _PASSED if k in body}
    view["messages"] = messages
    tools = body.get("tools")
    if isinstance(tools, list) and tools:
        view["tools"] = [tool(t) for t in tools]
    return view


def _system_text(system: Any) -> str:
    if system is None:
        return ""
    if isinstance(system, str):
        return system
    if isinstance(system, list):
        return "".join(str(b.get("text") or "") for b in system
                       if isinstance(b, dict) and b.get("type") == "text")
    raise NoView("system")


def _anthropic_message(message: Any) -> list[dict[str, Any]]:
    """One Anthropic message as one chat message, plus a tool message per tool_result."""
    if not isinstance(message, dict) or not isinstance(message.get("role"), str):
        raise NoView("message")
    role, content = message["role"], message.get("content")
    if isinstance(content, str):
        return [{"role": role, "content": content}]
    if not isinstance(content, list):
        raise NoView("content")
    out: dict[str, Any] = {"role": role}
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    reasoning: list[str] = []
    for block in content:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            texts.append(str(block.get("text") or ""))
        elif kind == "tool_use":
            calls.append({"id": str(block.get("id") or ""), "type": "function",
                          "function": {"name": str(block.get("name") or ""),
                                       "arguments": json.dumps(block.get("input") or {})}})
        elif kind == "tool_result":
            results.append({"role": "tool", "tool_call_id": str(block.get("tool_use_id") or ""),
                            "content": _result_text(block.get("content"))})
        elif kind == "thinking":
            reasoning.append(str(block.get("thinking") or ""))
        elif kind not in ("image", "redacted_thinking", "tool_reference", "document"):
            raise NoView(f"content block {kind!r}")
    if texts:
        out["content"] = "".join(texts) if len(texts) == 1 else [
            {"type": "text", "text": t} for t in texts]
    if calls:
        out["tool_calls"] = calls
    if reasoning:
        out["reasoning"] = "".join(reasoning)
    # A user turn of tool results only is the tool messages alone (as vLLM converts it).
    kept = [out] if len(out) > 1 or not results else []
    return results + kept if role == "user" else kept + results


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(c.get("text") or "") for c in content
                         if isinstance(c, dict) and c.get("type") == "text")
    return "" if content is None else str(content)


def _anthropic_tool(tool: Any) -> dict[str, Any]:
    if not isinstance(tool, dict) or "name" not in tool:
        raise NoView("tool")
    function: dict[str, Any] = {"name": tool["name"],
                                "parameters": tool.get("input_schema") or {}}
    if tool.get("description"):
        function["description"] = tool["description"]
    return {"type": "function", "function": function}


def _responses_item(item: Any, chat: list[dict[str, Any]]) -> None:
    """One input item, merged as vLLM merges them (responses/utils.py): a function_call, a
    reasoning item or an assistant text joins the assistant message before it."""
    if not isinstance(item, dict):
        raise NoView("input item")
    last = chat[-1] if chat and chat[-1].get("role") == "assistant" else None
    kind = item.get("type", "message")
    if kind == "function_call":
        call = {"id": str(item.get("call_id") or ""), "type": "function",
                "function": {"name": str(item.get("name") or ""),
                             "arguments": str(item.get("arguments") or "")}}
        if last is not None:
            last.setdefault("tool_calls", []).append(call)
        else:
            chat.append({"role": "assistant", "tool_calls": [call]})
    elif kind == "function_call_output":
        output = item.get("output")
        chat.append({"role": "tool", "tool_call_id": str(item.get("call_id") or ""),
                     "content": output if isinstance(output, str) else json.dumps(output)})
    elif kind == "reasoning":
        parts = item.get("content") or item.get("summary") or []
        text = str(parts[0].get("text") or "") if parts and isinstance(parts[0], dict) else ""
        if last is not None and last.get("reasoning") is None:
            last["reasoning"] = text
        else:
            chat.append({"role": "assistant", "reasoning": text})
    elif kind == "message":
        role = item.get("role")
        if not isinstance(role, str):
            raise NoView("message role")
        text = _responses_content(item.get("content"))
        if role == "assistant" and last is not None and last.get("content") is None:
            last["content"] = text
        else:
            chat.append({"role": role, "content": text})
    else:
        raise NoView(f"input item {kind!r}")


def _responses_content(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text") or "") for p in content
                       if isinstance(p, dict) and p.get("type") in ("input_text", "output_text",
                                                                    "text"))
    raise NoView("message content")


def _responses_tool(tool: Any) -> dict[str, Any]:
    if not isinstance(tool, dict) or tool.get("type") != "function" or "name" not in tool:
        raise NoView("tool")  # built-in tools (web search, file search) have no chat form
    function = {k: tool[k] for k in ("name", "description", "parameters", "strict")
                if k in tool}
    return {"type": "function", "function": function}
