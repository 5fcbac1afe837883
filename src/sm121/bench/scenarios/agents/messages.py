"""An agent's conversation in process, typed: chat messages (`protocols.replies.ChatMessage`:
role, content, the assistant's tool calls, a tool result's call id) and the tool definitions
a request offers. They become the chat API's JSON only where a request body is built
(`wire`).

Keys a model does not name are kept and written back as given (a replayed capture's messages
may carry fields of their own, content may be a list of parts), and only the keys set are
written, so a message goes on the wire exactly as it was made or captured."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import JsonValue

from sm121.open_model import Open
from sm121.protocols.replies import ChatMessage


class FunctionSpec(Open):
    name: str
    description: str | None = None
    parameters: JsonValue = None  # a JSON schema


class ToolSpec(Open):
    """An OpenAI function tool a request offers."""

    type: str = "function"
    function: FunctionSpec


def user(text: str) -> ChatMessage:
    return ChatMessage(role="user", content=text)


def wire(items: Sequence[ChatMessage] | Sequence[ToolSpec]) -> list[dict[str, Any]]:
    """Messages or tools as a request body carries them: the keys each was given."""
    return [item.model_dump(mode="json", exclude_unset=True) for item in items]
