"""The request policy: strip or reject request parameters named by the recipe, and supply
the defaults it names (tool_choice, chat template kwargs) where a client left them out.

Pure functions on the decoded JSON body. A neutral value (for example repetition_penalty 1.0,
which `vllm bench serve` sends in every completions request) passes silently and unchanged:
it does nothing in the engine, and stripping it would make a benchmark look different from
what it sent.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from sm121.errors import Sm121Error
from sm121.recipes.schema import (
    ArgValue,
    ParamPolicy,
    PolicyAction,
    RequestDefaults,
    RequestPolicy,
)


class PolicyViolation(Sm121Error):
    """A parameter the policy rejects; the client gets a 400 naming it and why."""

    def __init__(self, param: str, value: Any, reason: str) -> None:
        super().__init__(f"parameter {param!r} is not accepted by this endpoint "
                         f"(value {value!r}): {reason}")
        self.param, self.value, self.reason = param, value, reason


@dataclass
class PolicyOutcome:
    stripped: list[str] = field(default_factory=list)
    supplied: list[str] = field(default_factory=list)  # defaults the client had omitted

    @property
    def changed(self) -> bool:
        """The body differs from what the client sent: it must be re-encoded, not relayed
        as the client's bytes (a supplied default alone is a change)."""
        return bool(self.stripped or self.supplied)


def apply_policy(body: dict[str, Any], policy: RequestPolicy) -> PolicyOutcome:
    """Remove stripped parameters from `body` in place; raise PolicyViolation for a rejected
    one. Rejection is checked first, so a request is never half-rewritten and then refused."""
    offending = [(name, rule) for name, rule in policy.params.items()
                 if name in body and not is_neutral(body[name], rule)]
    for name, rule in offending:
        if rule.action == PolicyAction.REJECT:
            raise PolicyViolation(name, body[name], rule.reason)
    outcome = PolicyOutcome()
    for name, _rule in offending:
        del body[name]
        outcome.stripped.append(name)
    outcome.supplied = apply_defaults(body, policy.defaults)
    return outcome


def apply_defaults(body: dict[str, Any], defaults: RequestDefaults) -> list[str]:
    """Fill what a chat (or responses) request left out; returns the names supplied."""
    supplied: list[str] = []
    if _openai_tools(body.get("tools")):
        for name in ("tool_choice", "parallel_tool_calls"):
            value = getattr(defaults, name)
            if value is not None and name not in body:
                body[name] = value
                supplied.append(name)
    client = body.get("chat_template_kwargs") or {}
    if defaults.chat_template_kwargs and "messages" in body and isinstance(client, dict):
        merged = {**defaults.chat_template_kwargs, **client}
        if merged != client:
            body["chat_template_kwargs"] = merged
            supplied.append("chat_template_kwargs")
    return supplied


def _openai_tools(tools: Any) -> bool:
    """OpenAI chat and responses tools are `type: function`; an Anthropic /v1/messages body
    has `input_schema` tools and an object tool_choice, so a string default would break it."""
    return (isinstance(tools, list) and bool(tools)
            and all(isinstance(t, dict) and t.get("type") == "function" for t in tools))


def is_neutral(value: Any, rule: ParamPolicy) -> bool:
    """null always means "the engine's default"; otherwise the value must equal a neutral one.
    Booleans never equal numbers here (JSON true is not 1)."""
    if value is None:
        return True
    neutral = rule.neutral if isinstance(rule.neutral, list) else [rule.neutral]
    return any(_same(value, n) for n in neutral if n is not None)


def _same(value: Any, neutral: ArgValue) -> bool:
    if isinstance(value, bool) or isinstance(neutral, bool):
        return type(value) is type(neutral) and value == neutral
    if isinstance(value, int | float) and isinstance(neutral, int | float):
        return math.isclose(float(value), float(neutral), rel_tol=0, abs_tol=1e-9)
    return bool(value == neutral)
