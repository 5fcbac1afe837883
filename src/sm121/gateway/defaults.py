"""A recipe's request defaults, written once (in chat-completions terms) and rendered in each
protocol's own spelling where they make sense:

- tool_choice auto, required, none: the same strings on chat and Responses; on Messages
  `{"type": "auto"}`, `{"type": "any"}`, `{"type": "none"}`;
- parallel_tool_calls false: the same flag on chat and Responses; on Messages
  `tool_choice.disable_parallel_tool_use: true`;
- chat_template_kwargs: merged under the client's own, on all three (a vLLM extension on
  Messages and Responses).

Tool defaults go only to requests that carry tools (vLLM refuses tool_choice without them);
a value the client sent always wins, key by key. Completions has no tools and no template.
Each function fills `body` in place and returns the names it supplied. The protocols' own
facts are in protocols/routes.py; this rendering stays in the gateway, since it reads the
recipe's policy (recipes/ is above protocols/).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sm121.protocols.routes import Api, Protocol
from sm121.recipes.schema import RequestDefaults

# Anthropic's names for the chat tool_choice strings (vLLM maps them back the same way).
ANTHROPIC_TOOL_CHOICE = {"auto": "auto", "required": "any", "none": "none"}


def chat_defaults(body: dict[str, Any], defaults: RequestDefaults) -> list[str]:
    """Chat completions and Responses: both have `type: function` tools and the same
    tool_choice strings and parallel_tool_calls flag."""
    supplied: list[str] = []
    if _function_tools(body.get("tools")):
        for name in ("tool_choice", "parallel_tool_calls"):
            value = getattr(defaults, name)
            if value is not None and name not in body:
                body[name] = value
                supplied.append(name)
    return supplied + template_defaults(body, defaults)


def messages_defaults(body: dict[str, Any], defaults: RequestDefaults) -> list[str]:
    supplied: list[str] = []
    tools = body.get("tools")
    if isinstance(tools, list) and tools:
        if defaults.tool_choice is not None and "tool_choice" not in body:
            body["tool_choice"] = {"type": ANTHROPIC_TOOL_CHOICE[defaults.tool_choice]}
            supplied.append("tool_choice")
        if defaults.parallel_tool_calls is not None and _parallel_open(body):
            # No tool_choice means auto to vLLM; the flag lives inside the object.
            choice = dict(body.get("tool_choice") or {"type": "auto"})
            choice["disable_parallel_tool_use"] = not defaults.parallel_tool_calls
            body["tool_choice"] = choice
            supplied.append("parallel_tool_calls")
    return supplied + template_defaults(body, defaults)


def no_defaults(body: dict[str, Any], defaults: RequestDefaults) -> list[str]:
    """Completions: no tools and no chat template to fill."""
    return []


def template_defaults(body: dict[str, Any], defaults: RequestDefaults) -> list[str]:
    client = body.get("chat_template_kwargs") or {}
    if not defaults.chat_template_kwargs or not isinstance(client, dict):
        return []
    merged = {**defaults.chat_template_kwargs, **client}
    if merged == client:
        return []
    body["chat_template_kwargs"] = merged
    return ["chat_template_kwargs"]


def _parallel_open(body: dict[str, Any]) -> bool:
    """The client said nothing about parallel tool use, and it can apply (not with none)."""
    choice = body.get("tool_choice")
    if choice is None:
        return True
    return (isinstance(choice, dict) and choice.get("type") != "none"
            and "disable_parallel_tool_use" not in choice)


def _function_tools(tools: Any) -> bool:
    return (isinstance(tools, list) and bool(tools)
            and all(isinstance(t, dict) and t.get("type") == "function" for t in tools))


Renderer = Callable[[dict[str, Any], RequestDefaults], list[str]]
# One line per protocol: a fifth protocol adds its spelling here.
RENDERERS: dict[Api, Renderer] = {Api.CHAT: chat_defaults, Api.COMPLETIONS: no_defaults,
                                  Api.MESSAGES: messages_defaults, Api.RESPONSES: chat_defaults}


def render_defaults(protocol: Protocol, body: dict[str, Any], defaults: RequestDefaults
                    ) -> list[str]:
    """Fill the recipe's defaults into `body` in `protocol`'s spelling; the names supplied."""
    return RENDERERS[protocol.api](body, defaults)
