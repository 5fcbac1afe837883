"""The tools agent-check offers, and the checks on the calls that come back.

The schemas are small and closed (enums, no free strings): a real model fills them at once,
and a random-weight test model under guided decoding cannot wander off into an endless
string. What a case asserts is what the server guarantees, not what a model chooses."""

from __future__ import annotations

import json
from dataclasses import dataclass

from jsonschema import Draft202012Validator

from sm121.bench.scenarios.agent_check.model import CaseFailed
from sm121.protocols.replies import ToolCall

WEATHER = {
    "type": "object",
    "properties": {"city": {"type": "string", "enum": ["Oslo", "Paris", "Lima"]},
                   "unit": {"type": "string", "enum": ["c", "f"]}},
    "required": ["city", "unit"],
    "additionalProperties": False,
}
CLOCK = {
    "type": "object",
    "properties": {"zone": {"type": "string", "enum": ["UTC", "CET"]}},
    "required": ["zone"],
    "additionalProperties": False,
}
SCHEMAS = {"get_weather": WEATHER, "get_time": CLOCK}
TOOLS = [
    {"type": "function", "function": {"name": name, "description": description,
                                      "parameters": SCHEMAS[name]}}
    for name, description in (("get_weather", "Current weather in a city."),
                              ("get_time", "Current time in a time zone."))
]
ASK = "What is the weather in Oslo in celsius, and the time in UTC? Use the tools."


# chat's tool_choice for one named tool (the cases name get_weather: its schema is the larger).
NAMED_WEATHER = {"type": "function", "function": {"name": "get_weather"}}


@dataclass(frozen=True)
class CheckedCall:
    """A tool call that passed `check_call`: an offered tool, arguments valid for its schema
    (objects of string enums, so their values are strings)."""

    name: str
    arguments: dict[str, str]

    def __repr__(self) -> str:  # a case's reason quotes it as the JSON-like pair it stands for
        return repr({"name": self.name, "arguments": self.arguments})


def check_call(call: ToolCall, allowed: set[str]) -> CheckedCall:
    """The call names an offered tool; its arguments are a JSON string whose value matches
    that tool's schema. Returns the name and the arguments parsed."""
    name = call.function.name
    if name is None or name not in allowed:
        raise CaseFailed(f"tool call names {name!r}, not one of {sorted(allowed)}")
    raw = call.function.arguments
    if not isinstance(raw, str):
        raise CaseFailed(f"{name}: arguments is {type(raw).__name__}, not a JSON string")
    try:
        arguments = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise CaseFailed(f"{name}: arguments {raw[:120]!r} are not JSON ({exc.msg})") from exc
    errors = sorted(Draft202012Validator(SCHEMAS[name]).iter_errors(arguments),
                    key=lambda e: list(e.path))
    if errors:
        raise CaseFailed(f"{name}: arguments {raw[:120]!r} do not match the tool's schema: "
                         f"{errors[0].message}")
    if not call.id:
        raise CaseFailed(f"{name}: the tool call has no id (a tool result cannot refer to it)")
    return CheckedCall(name, arguments)

