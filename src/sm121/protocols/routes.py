"""The generation routes' protocols, described once: chat completions, completions, Anthropic
Messages (Claude Code) and Responses (Codex). The gateway finds a request's description once,
from its route, and every step reads it instead of assuming chat: the policy renders the
recipe's defaults in the protocol's spelling (gateway/defaults.py, by `api`), the context check
and the long-prompt lane count the protocol's prompt, the locality watch compares it, the
token metrics and the capture name the protocol, and an upstream that dies mid-stream is
reported in the protocol's own error event. bench and agent-check take the routes from here.

- chat (`/v1/chat/completions`): usage in `usage` (a stream's last chunk, when it asks
  stream_options.include_usage); a stream ends `data: [DONE]`, an error is `data: {"error"}`;
  tools are `tools[].function`, tool_choice a string or `{"type": "function", ...}`; the
  prompt is `messages` and the tools.
- completions (`/v1/completions`): as chat, without tools; the prompt is `prompt`.
- messages (`/v1/messages`, Anthropic): usage in `message_delta.usage`, its input maybe only in
  `message_start.message.usage`; a stream ends `event: message_stop`, an error is
  `event: error`; tools carry `input_schema`, tool_choice is `{"type": "auto" | "any" |
  "tool" | "none"}`; the prompt is `system` and the `messages` blocks, and the tools.
- responses (`/v1/responses`): usage in `response.usage` of `response.completed`; a stream
  ends `event: response.completed`, an error is `event: error`; tools are flat `type:
  function` entries, tool_choice a string or `{"type": "function", "name"}`; the prompt is
  `instructions` and the `input` items, and the tools.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from sm121.protocols import chat_view
from sm121.protocols.usage import is_count


class Api(StrEnum):
    CHAT = "chat"
    COMPLETIONS = "completions"
    MESSAGES = "messages"
    RESPONSES = "responses"


ChatView = Callable[[Mapping[str, Any]], dict[str, Any] | None]
StreamError = Callable[[str, str, int], bytes]


@dataclass(frozen=True)
class Protocol:
    api: Api
    route: str
    output_fields: tuple[str, ...]  # what bounds the reply's length
    prompt_field: str  # names the prompt in a context-length error
    chat_view: ChatView  # its prompt in chat-completions form, for /tokenize and locality
    stream_error: StreamError
    error_body: Callable[[int, str, str, str | None, str | None], dict[str, Any]]

    def requested_output(self, body: Mapping[str, Any]) -> int | None:
        name = self.output_field(body)
        value = body.get(name)
        return value if is_count(value) else None

    def output_field(self, body: Mapping[str, Any]) -> str:
        """The field that bounds this body's reply (the protocol's last, when none is set)."""
        for name in self.output_fields:
            value = body.get(name)
            if is_count(value):
                return name
        return self.output_fields[-1]


def openai_error(status: int, message: str, kind: str, param: str | None = None,
                 code: str | None = None) -> dict[str, Any]:
    """The OpenAI shape the engine itself uses, so clients parse the gateway's the same:
    {"error": {"message", "type", "param", "code"}}."""
    return {"error": {"message": message, "type": kind, "param": param,
                      "code": code or status}}


def anthropic_error(status: int, message: str, kind: str, param: str | None = None,
                    code: str | None = None) -> dict[str, Any]:
    """Anthropic's shape (vLLM's Messages route answers in it too; it has no param or code);
    `error.message` is where both SDKs look, so either shape reads, but Claude Code's own
    checks expect this one."""
    return {"type": "error", "error": {"type": kind, "message": message}}


def openai_stream_error(message: str, kind: str, status: int = 502) -> bytes:
    """An error event and the stream's normal end, so a client's loop exits and sees why."""
    payload = json.dumps(openai_error(status, message, kind))
    return f"data: {payload}\n\ndata: [DONE]\n\n".encode()


def anthropic_stream_error(message: str, kind: str, status: int = 502) -> bytes:
    """`event: error`: the anthropic SDK raises it as an APIStatusError with this body."""
    payload = json.dumps(anthropic_error(status, message, kind))
    return f"event: error\ndata: {payload}\n\n".encode()


def responses_stream_error(message: str, kind: str, status: int = 502) -> bytes:
    """The Responses stream's `error` event (type, code, message); the `error` object beside
    them is what makes the openai SDK raise instead of yielding it as an event."""
    payload = json.dumps({"type": "error", "code": kind, "message": message, "param": None,
                          "error": {"type": kind, "message": message}})
    return f"event: error\ndata: {payload}\n\n".encode()


def _chat_itself(body: Mapping[str, Any]) -> dict[str, Any] | None:
    return dict(body) if isinstance(body.get("messages"), list) else None


def _completions_itself(body: Mapping[str, Any]) -> dict[str, Any] | None:
    return dict(body) if "prompt" in body else None


# Where each protocol's usage is, and how its stream ends: the module docstring (the gateway's
# observe.py and protocols/usage.py read every shape).
CHAT = Protocol(Api.CHAT, "/v1/chat/completions", ("max_completion_tokens", "max_tokens"),
                "messages", _chat_itself, openai_stream_error, openai_error)
COMPLETIONS = Protocol(Api.COMPLETIONS, "/v1/completions", ("max_tokens",), "prompt",
                       _completions_itself, openai_stream_error, openai_error)
MESSAGES = Protocol(Api.MESSAGES, "/v1/messages", ("max_tokens",), "messages",
                    chat_view.messages_to_chat, anthropic_stream_error, anthropic_error)
RESPONSES = Protocol(Api.RESPONSES, "/v1/responses", ("max_output_tokens",), "input",
                     chat_view.responses_to_chat, responses_stream_error, openai_error)
PROTOCOLS: dict[str, Protocol] = {p.route: p for p in (CHAT, COMPLETIONS, MESSAGES, RESPONSES)}
BY_API: dict[Api, Protocol] = {p.api: p for p in PROTOCOLS.values()}
GENERATION_ROUTES = tuple(PROTOCOLS)
# Anthropic's token count beside Messages: no generation, so a plain route (no protocol).
COUNT_TOKENS_ROUTE = "/v1/messages/count_tokens"


def protocol_for(route: str) -> Protocol | None:
    """The protocol of a generation route; None for every other route."""
    return PROTOCOLS.get(route)


def route_of(api: str) -> str:
    """The route of a protocol by its name (`chat`, `completions`, `messages`, `responses`)."""
    return BY_API[Api(api)].route


def overload_answer(protocol: Protocol) -> tuple[int, str]:
    """The status and error type a server of `protocol` answers when it is overloaded and the
    client should retry later: Anthropic's 529 overloaded_error on Messages, 429 elsewhere
    (OpenAI's "rate_limit_exceeded"). Both SDKs retry either, honouring Retry-After."""
    if protocol.api is Api.MESSAGES:
        return 529, "overloaded_error"
    return 429, "rate_limit_exceeded"
