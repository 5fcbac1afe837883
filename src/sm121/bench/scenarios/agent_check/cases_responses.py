"""agent-check on the Responses API (`/v1/responses`), each case as Codex runs it: tools with
auto, required and a named function; streamed function-call arguments assembled; the
function_call_output on the next turn; usage in the stream; max_output_tokens; stop (vLLM's
extension); a prompt over the context and a long one near it. The API has no count route:
that case is unsupported, saying so.

An empty `output` is not taken at its word: the same prompt goes over chat completions, and
only when chat has text where Responses has none is it a Responses failure (a random-weight
model's tokens may decode to no text at all, and vLLM adds a message item only for text)."""

from __future__ import annotations

from typing import Any

from sm121.bench.scenarios.agent_check.cases_api import stop_word
from sm121.bench.scenarios.agent_check.cases_limits import TextAsk, long_input, overflow
from sm121.bench.scenarios.agent_check.cases_tools import CHAT
from sm121.bench.scenarios.agent_check.forced import no_forced_call
from sm121.bench.scenarios.agent_check.model import CaseFailed, CaseUnsupported
from sm121.bench.scenarios.agent_check.probe import Case, Probe, Reply
from sm121.bench.scenarios.agent_check.tools import ASK, SCHEMAS, CheckedCall, check_call
from sm121.protocols.assembly import assemble_responses_stream, response_calls
from sm121.protocols.replies import ChatCompletion, ResponseObject
from sm121.protocols.routes import RESPONSES

ROUTE = RESPONSES.route
CALL_TOKENS = 96
TOOLS = [{"type": "function", "name": name, "description": description,
          "parameters": SCHEMAS[name]}
         for name, description in (("get_weather", "Current weather in a city."),
                                   ("get_time", "Current time in a time zone."))]
NAMED = {"type": "function", "name": "get_weather"}
NOTE = "Write a short note about prefix caching."


def body(p: Probe, **extra: Any) -> dict[str, Any]:
    return {"model": p.model, "input": ASK, "tools": TOOLS, "max_output_tokens": CALL_TOKENS,
            "temperature": 0, **extra}


def response(reply: Reply, what: str) -> ResponseObject:
    if reply.status in (404, 405):
        raise CaseUnsupported(f"the server offers no /v1/responses (HTTP {reply.status})")
    data = reply.parsed(ResponseObject, what) if reply.status == 200 else None
    if data is None or data.object != "response":
        raise CaseFailed(f"{what}: HTTP {reply.status}: {str(reply.body)[:300]}")
    return data


def _calls(data: ResponseObject, allowed: set[str]) -> list[CheckedCall]:
    return [check_call(c, allowed) for c in response_calls(data.output)]


def forced(p: Probe, reply: Reply, what: str, choice: object) -> ResponseObject:
    """The response to a forced call (tool_choice required or a named function); no
    function_call in it fails or is unsupported with the engine's reason (forced.py)."""
    data = response(reply, what)
    if not response_calls(data.output):
        # Cut at the limit: said as `incomplete` (vLLM), or only by the count (llama-server
        # b11434 calls such a response completed).
        details = data.incomplete_details
        used = data.usage.output_tokens if data.usage is not None else None
        cut = (details is not None and details.reason == "max_output_tokens") or (
            used is not None and used >= CALL_TOKENS)
        raise no_forced_call(p, what, _shown(data), named=isinstance(choice, dict), cut=cut)
    return data


def _shown(data: ResponseObject) -> str:
    """The output items as they came (a case's reason quotes them)."""
    return str([item.echoed() for item in data.output])


async def tools_auto(p: Probe) -> str:
    data = response(await p.post(ROUTE, body(p, tool_choice="auto")), "tool_choice auto")
    calls = _calls(data, set(SCHEMAS))
    if calls:
        return f"accepted; {len(calls)} schema-valid function_call(s): {[c.name for c in calls]}"
    return f"accepted; no call (auto lets the model choose), status {data.status!r}"


async def tools_required(p: Probe) -> str:
    data = forced(p, await p.post(ROUTE, body(p, tool_choice="required")),
                  "tool_choice required", "required")
    calls = _calls(data, set(SCHEMAS))
    return f"{len(calls)} schema-valid function_call(s): {calls}"


async def tools_named(p: Probe) -> str:
    data = forced(p, await p.post(ROUTE, body(p, tool_choice=NAMED)), "named function", NAMED)
    calls = _calls(data, {"get_weather"})
    if len(calls) != 1:
        raise CaseFailed(f"a named tool_choice gave {len(calls)} get_weather calls, expected 1")
    return f"one schema-valid function_call: {calls[0]}"


async def tools_streamed(p: Probe) -> str:
    whole = _calls(forced(p, await p.post(ROUTE, body(p, tool_choice=NAMED)), "named", NAMED),
                   {"get_weather"})
    streamed = await p.stream(ROUTE, body(p, tool_choice=NAMED))
    if streamed.status != 200:
        raise CaseFailed(f"stream: HTTP {streamed.status}: {str(streamed.error_body)[:300]}")
    reply = assemble_responses_stream(streamed.chunks)
    if reply.response is None:
        raise CaseFailed("the stream ended without response.completed")
    assembled = [check_call(c, {"get_weather"}) for c in reply.calls]
    if not assembled:
        raise CaseFailed("the stream carried no function_call item")
    if assembled != whole:
        raise CaseFailed(f"streamed call {assembled} differs from the whole reply's {whole}")
    return f"{len(streamed.chunks)} events assemble into {assembled[0]}, same as non-streamed"


async def tool_result_round_trip(p: Probe) -> str:
    """Turn two as Codex sends it (no stored state): the input, the function_call items of
    turn one as they came, and a function_call_output for the first."""
    first = forced(p, await p.post(ROUTE, body(p, tool_choice=NAMED)), "turn 1 (named)", NAMED)
    items = [i for i in first.output if i.type == "function_call"]
    given = [{"role": "user", "content": ASK}, *(i.echoed() for i in items),
             {"type": "function_call_output", "call_id": items[0].call_id,
              "output": '{"temperature": 7, "unit": "c", "sky": "rain"}'}]
    second = response(await p.post(ROUTE, body(p, input=given, tool_choice="auto",
                                                max_output_tokens=16)),
                      "turn 2 (function_call_output)")
    return (f"function_call_output for {items[0].call_id} accepted; turn 2 status "
            f"{second.status!r}, {len(second.output)} output item(s)")


async def usage_in_stream(p: Probe) -> str:
    streamed = await p.stream(ROUTE, {"model": p.model, "input": NOTE, "temperature": 0,
                                      "max_output_tokens": 16})
    if streamed.status != 200:
        raise CaseFailed(f"stream: HTTP {streamed.status}: {str(streamed.error_body)[:300]}")
    final = assemble_responses_stream(streamed.chunks).response
    usage = final.usage if final else None
    if not usage or not usage.input_tokens or not usage.output_tokens:
        raise CaseFailed(f"the final event's usage lacks input or output tokens: {usage}")
    return f"response.completed usage {usage}"


async def max_output_tokens(p: Probe) -> str:
    """Five tokens asked: at most five generated, `incomplete` at exactly five; an empty
    output is judged against chat's text for the same prompt."""
    data = response(await p.post(ROUTE, {"model": p.model, "input": NOTE, "temperature": 0,
                                         "max_output_tokens": 5}), "max_output_tokens 5")
    tokens = data.usage.output_tokens if data.usage else None
    reason = data.incomplete_details.reason if data.incomplete_details else None
    if not isinstance(tokens, int) or tokens > 5 or (reason == "max_output_tokens"
                                                     and tokens != 5):
        raise CaseFailed(f"max_output_tokens 5 gave output_tokens {tokens}, incomplete {reason}")
    texts = data.texts()
    if not any(texts):
        chat = await p.post(CHAT, {"model": p.model, "temperature": 0, "max_tokens": 5,
                                   "messages": [{"role": "user", "content": NOTE}]})
        choices = chat.parsed(ChatCompletion, "the same prompt over chat").choices
        chat_text = choices[0].message.content if choices else None
        if chat_text:
            raise CaseFailed(f"output {_shown(data)} has no text where chat answers "
                             f"{chat_text!r} for the same prompt")
        return (f"output_tokens {tokens}, incomplete {reason!r}; no message item: the {tokens} "
                "tokens decode to no text, as chat's reply to the same prompt (vLLM adds a "
                "message item only for text)")
    return f"output_tokens {tokens} <= 5, incomplete {reason!r}, text {texts[0]!r}"


async def stop_honoured(p: Probe) -> str:
    """`stop` is vLLM's extension of the Responses API (OpenAI's has none): greedy text,
    then the same request stopping at a piece of it."""
    plain = {"model": p.model, "input": NOTE, "temperature": 0, "max_output_tokens": 24}
    text = "".join(response(await p.post(ROUTE, plain), "without stop").texts())
    stop = stop_word(text)
    if stop is None:
        raise CaseUnsupported(f"the reply {text!r} has no piece to stop at")
    cut = "".join(response(await p.post(ROUTE, {**plain, "stop": [stop]}), "with stop").texts())
    if cut == text:
        raise CaseUnsupported("the engine ignores `stop` on /v1/responses (a vLLM extension, "
                              "not in OpenAI's Responses API)")
    if stop in cut or not text.startswith(cut):
        raise CaseFailed(f"stop {stop!r}: got {cut!r}, expected the text before it")
    return f"stop {stop!r} (vLLM's extension) cut {len(text)} chars to {len(cut)}"


async def no_count(p: Probe) -> str:
    raise CaseUnsupported("the Responses API has no token-count route in vLLM")


TEXT_ASK = TextAsk(
    route=ROUTE, prompt_field="input",
    body=lambda p, text: {"model": p.model, "input": text, "max_output_tokens": 16,
                          "temperature": 0},
    read=response, served=lambda data: data.usage.input_tokens if data.usage else None)


def cases(long_tokens: int | None) -> dict[str, Case]:
    return {
        "tools.auto": tools_auto,
        "tools.required": tools_required,
        "tools.named": tools_named,
        "tools.streamed": tools_streamed,
        "tools.result-round-trip": tool_result_round_trip,
        "stream.usage": usage_in_stream,
        "params.max-tokens": max_output_tokens,
        "params.stop": stop_honoured,
        "api.count-tokens": no_count,
        "limits.overflow-400": overflow(TEXT_ASK),
        "limits.long-input": long_input(TEXT_ASK, long_tokens),
    }
