"""The request policy: strip or reject request parameters named by the recipe, and supply
the defaults it names (tool_choice, chat template kwargs) where a client left them out, in the
spelling of the request's protocol (gateway/defaults.py). What happened to each parameter is
a `Change`, never a free string.

Pure functions on the decoded JSON body. A neutral value (for example repetition_penalty 1.0,
which `vllm bench serve` sends in every completions request) passes silently and unchanged:
it does nothing in the engine, and stripping it would make a benchmark look different from
what it sent. Neutral means exactly the neutral value (1 and 1.0 are the same number): a
near-neutral one (1.00000000001) may already take the engine's penalty path, which is what the
recipe strips the parameter for, so it is stripped and counted like any other value.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from sm121.errors import Sm121Error
from sm121.gateway.defaults import render_defaults
from sm121.protocols.routes import CHAT, Protocol
from sm121.recipes.schema import (
    ArgValue,
    ParamPolicy,
    PolicyAction,
    RequestPolicy,
)


class PolicyViolation(Sm121Error):
    """A parameter the policy rejects; the client gets a 400 naming it and why."""

    def __init__(self, param: str, value: Any, reason: str) -> None:
        super().__init__(f"parameter {param!r} is not accepted by this endpoint "
                         f"(value {value!r}): {reason}")
        self.param, self.value, self.reason = param, value, reason


class Change(StrEnum):
    """What the policy did to one parameter of a request."""

    STRIPPED = "stripped"  # a non-neutral value the engine would refuse or misuse: removed
    SUPPLIED = "supplied"  # a default the client had left out: filled in


@dataclass
class PolicyOutcome:
    changes: dict[str, Change] = field(default_factory=dict)  # in the order they were made

    def names(self, change: Change) -> list[str]:
        return [name for name, c in self.changes.items() if c is change]

    @property
    def stripped(self) -> list[str]:
        return self.names(Change.STRIPPED)

    @property
    def supplied(self) -> list[str]:
        return self.names(Change.SUPPLIED)

    @property
    def changed(self) -> bool:
        """The body differs from what the client sent: it must be re-encoded, not relayed
        as the client's bytes (a supplied default alone is a change)."""
        return bool(self.changes)


def apply_policy(body: dict[str, Any], policy: RequestPolicy, protocol: Protocol = CHAT
                 ) -> PolicyOutcome:
    """Remove stripped parameters from `body` in place, then supply the defaults in the
    protocol's spelling; raise PolicyViolation for a rejected parameter. Rejection is checked
    first, so a request is never half-rewritten and then refused."""
    offending = [(name, rule) for name, rule in policy.params.items()
                 if name in body and not is_neutral(body[name], rule)]
    for name, rule in offending:
        if rule.action == PolicyAction.REJECT:
            raise PolicyViolation(name, body[name], rule.reason)
    outcome = PolicyOutcome()
    for name, _rule in offending:
        del body[name]
        outcome.changes[name] = Change.STRIPPED
    for name in render_defaults(protocol, body, policy.defaults):
        outcome.changes.setdefault(name, Change.SUPPLIED)
    return outcome


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
        return value == neutral  # exact: Python compares an int and a float by their values
    return bool(value == neutral)
