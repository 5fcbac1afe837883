"""Tool-calling cases: tool_choice auto / none / required / named, streamed calls, parallel
calls and a tool result sent back. What real agent clients send in almost every request."""

from __future__ import annotations

from typing import Any

from sm121.bench.scenarios.agent_check.forced import no_forced_call
from sm121.bench.scenarios.agent_check.model import CaseFailed
from sm121.bench.scenarios.agent_check.probe import Case, Probe, Reply
from sm121.bench.scenarios.agent_check.tools import ASK, NAMED_WEATHER, SCHEMAS, TOOLS, check_call
from sm121.engines.registry import adapters
from sm121.protocols import routes
from sm121.protocols.assembly import assemble_chat_tool_calls
from sm121.protocols.replies import ChatChoice, ChatCompletion, ChatMessage

CHAT = routes.CHAT.route
# Enough for one or two calls with these closed schemas.
CALL_TOKENS = 96
PARSER_HINT = ("the server has no tool calling: start vLLM with --enable-auto-tool-choice "
               "--tool-call-parser NAME (in a recipe: enable-auto-tool-choice: true, "
               "tool-call-parser: NAME)")


def _names_parser_flag(detail: str) -> bool:
    """Whether an engine's error names its tool-call parser flag (it has no tool calling)."""
    return any(engine.tool_call_parser in detail for engine in adapters())


def chat_body(p: Probe, **extra: Any) -> dict[str, Any]:
    return {"model": p.model, "messages": [{"role": "user", "content": ASK}], "tools": TOOLS,
            "max_tokens": CALL_TOKENS, "temperature": 0, "seed": 121, **extra}


def completion(reply: Reply, what: str) -> ChatCompletion:
    """A 200 with choices, or the case fails naming what the server said."""
    if reply.status != 200:
        detail = str(reply.body)[:300]
        hint = f"; {PARSER_HINT}" if _names_parser_flag(detail) else ""
        raise CaseFailed(f"{what}: HTTP {reply.status}: {detail}{hint}")
    data = reply.parsed(ChatCompletion, what)
    if not data.choices:
        raise CaseFailed(f"{what}: the reply has no choices")
    return data


def accepted(reply: Reply, what: str) -> ChatMessage:
    """The first choice's message of a 200."""
    return completion(reply, what).choices[0].message


def forced(p: Probe, body: dict[str, Any], what: str, reply: Reply) -> ChatMessage:
    """The first choice's message of a 200 to a forced call (`body`'s tool_choice required or
    named); no call in it fails or is unsupported with the engine's reason (forced.py)."""
    choice: ChatChoice = completion(reply, what).choices[0]
    if not choice.message.calls:
        raise no_forced_call(p, what, choice.message.content,
                             named=isinstance(body.get("tool_choice"), dict),
                             cut=choice.finish_reason == "length")
    return choice.message


async def forced_post(p: Probe, what: str, **extra: Any) -> ChatMessage:
    body = chat_body(p, **extra)
    return forced(p, body, what, await p.post(CHAT, body))


async def tool_choice_auto(p: Probe) -> str:
    message = accepted(await p.post(CHAT, chat_body(p, tool_choice="auto")), "tool_choice auto")
    calls = [check_call(c, set(SCHEMAS)) for c in message.calls]
    if calls:
        return f"accepted; {len(calls)} schema-valid call(s): {[c.name for c in calls]}"
    return "accepted; the model answered in text (auto lets it choose)"


async def tool_choice_none(p: Probe) -> str:
    message = accepted(await p.post(CHAT, chat_body(p, tool_choice="none")), "tool_choice none")
    if message.calls:
        raise CaseFailed(f"tool_choice none returned tool calls: "
                         f"{[c.echoed() for c in message.calls]}")
    return "accepted; no tool call, as asked"


async def tool_choice_required(p: Probe) -> str:
    message = await forced_post(p, "tool_choice required", tool_choice="required")
    calls = [check_call(c, set(SCHEMAS)) for c in message.calls]
    return f"{len(calls)} schema-valid call(s): {calls}"


async def tool_choice_named(p: Probe) -> str:
    message = await forced_post(p, "named tool_choice", tool_choice=NAMED_WEATHER)
    calls = [check_call(c, {"get_weather"}) for c in message.calls]
    if len(calls) != 1:
        raise CaseFailed(f"a named tool_choice returned {len(calls)} calls of get_weather, "
                         f"expected 1; content: {str(message.content)[:200]!r}")
    return f"one schema-valid call: {calls[0]}"


async def streamed_tool_call(p: Probe) -> str:
    """The streamed deltas of a named call assemble into a valid call, the same one the
    non-streamed request returns (temperature 0, one seed)."""
    body = chat_body(p, tool_choice=NAMED_WEATHER)
    whole = [check_call(c, {"get_weather"})
             for c in forced(p, body, "named tool_choice", await p.post(CHAT, body)).calls]
    streamed = await p.stream(CHAT, body)
    if streamed.status != 200:
        raise CaseFailed(f"streamed named tool_choice: HTTP {streamed.status}: "
                         f"{str(streamed.error_body)[:300]}")
    if not streamed.done:
        raise CaseFailed("the stream ended without [DONE]")
    assembled = [check_call(c, {"get_weather"}) for c in assemble_chat_tool_calls(streamed.chunks)]
    if not assembled:
        raise CaseFailed("the stream carried no tool-call deltas")
    if assembled != whole:
        raise CaseFailed(f"streamed call {assembled} differs from the non-streamed {whole}")
    return f"{len(streamed.chunks)} chunks assemble into {assembled[0]}, same as non-streamed"


async def parallel_tool_calls(p: Probe) -> str:
    """parallel_tool_calls true is accepted and every call is valid; false allows at most one
    call (that one the server enforces; how many calls a model makes is its own choice)."""
    many = await forced_post(p, "tool_choice required with parallel_tool_calls true",
                             tool_choice="required", parallel_tool_calls=True)
    calls = [check_call(c, set(SCHEMAS)) for c in many.calls]
    single = await forced_post(p, "tool_choice required with parallel_tool_calls false",
                               tool_choice="required", parallel_tool_calls=False)
    one = [check_call(c, set(SCHEMAS)) for c in single.calls]
    if len(one) != 1:
        raise CaseFailed(f"parallel_tool_calls false returned {len(one)} calls, expected 1")
    return (f"parallel true: {len(calls)} valid call(s) {[c.name for c in calls]}; "
            "parallel false: exactly 1")


async def tool_result_round_trip(p: Probe) -> str:
    """Turn two of an agent loop: the assistant's call and the tool's result (role tool,
    tool_call_id) go back, and the server answers the next assistant turn."""
    first = await forced_post(p, "turn 1 (named tool_choice)", tool_choice=NAMED_WEATHER)
    call = first.calls[0]
    check_call(call, {"get_weather"})
    messages = [{"role": "user", "content": ASK},
                {"role": "assistant", "content": first.content, "tool_calls": [call.echoed()]},
                {"role": "tool", "tool_call_id": call.id,
                 "content": '{"temperature": 7, "unit": "c", "sky": "rain"}'}]
    second = accepted(await p.post(CHAT, chat_body(p, messages=messages, tool_choice="auto",
                                                    max_tokens=16)),
                      "turn 2 (tool result)")
    if second.role != "assistant":
        raise CaseFailed(f"turn 2 answered with role {second.role!r}")
    return f"tool result for {call.id} accepted; turn 2 answered by the assistant"


CASES: dict[str, Case] = {
    "tools.auto": tool_choice_auto,
    "tools.none": tool_choice_none,
    "tools.required": tool_choice_required,
    "tools.named": tool_choice_named,
    "tools.streamed": streamed_tool_call,
    "tools.parallel": parallel_tool_calls,
    "tools.result-round-trip": tool_result_round_trip,
}
