"""agent-check on Anthropic Messages (`/v1/messages`), each case as Claude Code runs it: tools
with auto, any and a named tool; a streamed tool use assembled from its input_json_delta
pieces; the tool_result on the next turn; usage in the stream; stop_sequences, max_tokens,
count_tokens, a prompt over the context and a long one near it."""

from __future__ import annotations

from typing import Any

from sm121.bench.scenarios.agent_check.cases_api import stop_word
from sm121.bench.scenarios.agent_check.cases_limits import TextAsk, long_input, overflow
from sm121.bench.scenarios.agent_check.forced import no_forced_call
from sm121.bench.scenarios.agent_check.model import CaseFailed, CaseUnsupported
from sm121.bench.scenarios.agent_check.probe import Case, Probe, Reply
from sm121.bench.scenarios.agent_check.tools import ASK, SCHEMAS, CheckedCall, check_call
from sm121.protocols.assembly import assemble_messages_stream, message_tool_uses
from sm121.protocols.replies import AnthropicMessage, Usage
from sm121.protocols.routes import COUNT_TOKENS_ROUTE, MESSAGES
from sm121.protocols.usage import prompt_tokens

ROUTE = MESSAGES.route
COUNT = COUNT_TOKENS_ROUTE
CALL_TOKENS = 96
TOOLS = [{"name": name, "description": description, "input_schema": SCHEMAS[name]}
         for name, description in (("get_weather", "Current weather in a city."),
                                   ("get_time", "Current time in a time zone."))]
NOTE = "Write a short note about prefix caching."
NAMED_WEATHER = {"type": "tool", "name": "get_weather"}  # Messages' tool_choice for one tool


def body(p: Probe, **extra: Any) -> dict[str, Any]:
    return {"model": p.model, "max_tokens": CALL_TOKENS, "temperature": 0, "tools": TOOLS,
            "messages": [{"role": "user", "content": ASK}], **extra}


def plain(p: Probe, **extra: Any) -> dict[str, Any]:
    return {"model": p.model, "max_tokens": 16, "temperature": 0,
            "messages": [{"role": "user", "content": NOTE}], **extra}


def message(reply: Reply, what: str) -> AnthropicMessage:
    if reply.status in (404, 405):
        raise CaseUnsupported(f"the server offers no Anthropic /v1/messages (HTTP {reply.status})")
    data = reply.parsed(AnthropicMessage, what) if reply.status == 200 else None
    if data is None or data.type != "message":
        raise CaseFailed(f"{what}: HTTP {reply.status}: {str(reply.body)[:300]}")
    return data


def _calls(data: AnthropicMessage, allowed: set[str]) -> list[CheckedCall]:
    return [check_call(c, allowed) for c in message_tool_uses(data.content)]


def forced(p: Probe, reply: Reply, what: str) -> AnthropicMessage:
    """The message of a forced call (tool_choice any or a named tool); no tool_use in it
    fails with the engine's reason (forced.py). A named tool is read on Messages by both
    engines sm121 knows (llama-server as any tool), so only the grammar is named."""
    data = message(reply, what)
    if not message_tool_uses(data.content):
        raise no_forced_call(p, what, [b.echoed() for b in data.content], named=False,
                             cut=data.stop_reason == "max_tokens")
    return data


async def tools_auto(p: Probe) -> str:
    data = message(await p.post(ROUTE, body(p, tool_choice={"type": "auto"})), "auto")
    calls = _calls(data, set(SCHEMAS))
    if calls:
        return f"accepted; {len(calls)} schema-valid tool_use block(s): {[c.name for c in calls]}"
    return f"accepted; the model answered in text (auto lets it choose), stop {data.stop_reason}"


async def tools_any(p: Probe) -> str:
    data = forced(p, await p.post(ROUTE, body(p, tool_choice={"type": "any"})),
                  "tool_choice any")
    calls = _calls(data, set(SCHEMAS))
    return f"{len(calls)} schema-valid tool_use block(s): {calls}, stop {data.stop_reason}"


async def tools_named(p: Probe) -> str:
    data = forced(p, await p.post(ROUTE, body(p, tool_choice=NAMED_WEATHER)), "named tool")
    calls = _calls(data, {"get_weather"})
    if len(calls) != 1:
        raise CaseFailed(f"a named tool_choice gave {len(calls)} get_weather calls, expected 1")
    return f"one schema-valid tool_use: {calls[0]}"


async def tools_streamed(p: Probe) -> str:
    """The input_json_delta pieces of a streamed tool use join into the same valid input as
    the whole reply's (temperature 0)."""
    named = body(p, tool_choice=NAMED_WEATHER)
    whole = _calls(forced(p, await p.post(ROUTE, named), "named tool"), {"get_weather"})
    streamed = await p.stream(ROUTE, named)
    if streamed.status != 200:
        raise CaseFailed(f"stream: HTTP {streamed.status}: {str(streamed.error_body)[:300]}")
    reply = assemble_messages_stream(streamed.chunks)
    if not reply.stopped:
        raise CaseFailed("the stream ended without message_stop")
    assembled = _calls(reply.message, {"get_weather"})
    if not assembled:
        raise CaseFailed("the stream carried no tool_use block")
    if assembled != whole:
        raise CaseFailed(f"streamed tool use {assembled} differs from the whole reply's {whole}")
    return f"{len(streamed.chunks)} events assemble into {assembled[0]}, same as non-streamed"


async def tool_result_round_trip(p: Probe) -> str:
    first = forced(p, await p.post(ROUTE, body(p, tool_choice=NAMED_WEATHER)),
                   "turn 1 (named tool)")
    use = next(b for b in first.content if b.type == "tool_use")
    messages = [{"role": "user", "content": ASK},
                {"role": "assistant", "content": [b.echoed() for b in first.content]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": use.id,
                     "content": '{"temperature": 7, "unit": "c", "sky": "rain"}'}]}]
    second = message(await p.post(ROUTE, body(p, messages=messages, max_tokens=16,
                                               tool_choice={"type": "auto"})),
                     "turn 2 (tool_result)")
    if second.role != "assistant":
        raise CaseFailed(f"turn 2 answered with role {second.role!r}")
    return (f"tool_result for {use.id} accepted; turn 2 answered, stop "
            f"{second.stop_reason}")


async def usage_in_stream(p: Probe) -> str:
    streamed = await p.stream(ROUTE, plain(p))
    if streamed.status != 200:
        raise CaseFailed(f"stream: HTTP {streamed.status}: {str(streamed.error_body)[:300]}")
    usage = assemble_messages_stream(streamed.chunks).message.usage
    if not total_input(usage) or not (usage and usage.output_tokens):
        raise CaseFailed(f"the stream's usage lacks input or output tokens: {usage}")
    return f"message_start/message_delta usage {usage}"


async def max_tokens_honoured(p: Probe) -> str:
    data = message(await p.post(ROUTE, plain(p, max_tokens=5)), "max_tokens 5")
    tokens = data.usage.output_tokens if data.usage else None
    stop = data.stop_reason
    if not isinstance(tokens, int) or tokens > 5 or (stop == "max_tokens" and tokens != 5):
        raise CaseFailed(f"max_tokens 5 gave output_tokens {tokens}, stop_reason {stop!r}")
    return f"output_tokens {tokens} <= 5, stop_reason {stop!r}"


async def stop_honoured(p: Probe) -> str:
    first = message(await p.post(ROUTE, plain(p, max_tokens=24)), "without stop")
    text = first.text()
    stop = stop_word(text)
    if stop is None:
        raise CaseUnsupported(f"the reply {text!r} has no piece to stop at (the model's "
                              "tokens decode to no text)")
    second = message(await p.post(ROUTE, plain(p, max_tokens=24, stop_sequences=[stop])),
                     "with stop_sequences")
    cut = second.text()
    if stop in cut or not text.startswith(cut) or second.stop_reason != "stop_sequence":
        raise CaseFailed(f"stop_sequences [{stop!r}]: got {cut!r}, stop_reason "
                         f"{second.stop_reason!r}")
    return f"stop_sequences [{stop!r}] cut {len(text)} chars to {len(cut)}, stop_sequence"


async def count_tokens(p: Probe) -> str:
    """count_tokens of a tool-bearing request equals the input_tokens its reply reports."""
    request = body(p, tool_choice={"type": "auto"}, max_tokens=4)
    counted = await p.post(COUNT, {k: v for k, v in request.items()
                                   if k in ("model", "messages", "tools", "system")})
    if counted.status in (404, 405):
        raise CaseUnsupported(f"the server has no {COUNT} (HTTP {counted.status})")
    count = counted.json().get("input_tokens")
    if counted.status != 200 or not isinstance(count, int):
        raise CaseFailed(f"count_tokens: HTTP {counted.status}: {str(counted.body)[:300]}")
    usage = message(await p.post(ROUTE, request), "the counted request").usage
    if total_input(usage) != count:
        raise CaseFailed(f"count_tokens says {count}, the reply's usage {usage}")
    return f"count_tokens {count} = the reply's input tokens ({usage})"


def total_input(usage: Usage | None) -> int:
    """Anthropic's input_tokens leaves out the prompt-cache hits, counted apart."""
    return prompt_tokens(usage.echoed() if usage else None) or 0


TEXT_ASK = TextAsk(
    route=ROUTE, prompt_field="messages",
    body=lambda p, text: {"model": p.model, "max_tokens": 16, "temperature": 0,
                          "messages": [{"role": "user", "content": text}]},
    read=message, served=lambda data: total_input(data.usage))


def cases(long_tokens: int | None) -> dict[str, Case]:
    return {
        "tools.auto": tools_auto,
        "tools.any": tools_any,
        "tools.named": tools_named,
        "tools.streamed": tools_streamed,
        "tools.result-round-trip": tool_result_round_trip,
        "stream.usage": usage_in_stream,
        "params.max-tokens": max_tokens_honoured,
        "params.stop": stop_honoured,
        "api.count-tokens": count_tokens,
        "limits.overflow-400": overflow(TEXT_ASK),
        "limits.long-input": long_input(TEXT_ASK, long_tokens),
    }
