"""The three protocols through the gateway with the real client libraries, against the real
tiny engine, each compared with the same calls made direct:
- the anthropic SDK (Claude Code's protocol): a streamed tool use, the tool_result turn, then
  count_tokens;
- the openai SDK on Responses (Codex's): a function call, and its output item on the next turn;
- the openai SDK on chat completions, as before.
Greedy decoding (temperature 0) and a schema-guided named tool: the same request gives the same
bytes of result direct and through the gateway. Then the gateway's Messages and Responses
token metrics and its locality watch, checked against the engine's own counters."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import aiohttp
import anthropic
import openai
import pytest
from prometheus_client.parser import text_string_to_metric_families
from support import TinyEngine, invoke_cli
from support.gateway_process import spawned_gateway

from sm121.bench.scenarios.agent_check.tools import ASK, SCHEMAS
from sm121.gateway.sessions import DEFAULT_SESSION_HEADER, session_id

pytestmark = pytest.mark.integration

MODEL = "tiny"
ANTHROPIC_TOOLS: list[Any] = [{"name": n, "description": f"{n} tool", "input_schema": SCHEMAS[n]}
                              for n in SCHEMAS]
RESPONSES_TOOLS: list[Any] = [{"type": "function", "name": n, "description": f"{n} tool",
                               "parameters": SCHEMAS[n]} for n in SCHEMAS]
RESULT = '{"temperature": 7, "unit": "c", "sky": "rain"}'


@pytest.fixture(scope="module")
def gateway_url(tiny_engine: TinyEngine, tmp_path_factory: pytest.TempPathFactory
                ) -> Iterator[str]:
    with spawned_gateway(tmp_path_factory.mktemp("gateway-protocols"), "--upstream",
                         tiny_engine.base_url, "--recipe", "tiny-cpu", "--long-prompt-tokens",
                         "4000", ready="/v1/models") as gateway:
        yield gateway.url


async def _claude_turns(base_url: str) -> dict[str, Any]:
    client = anthropic.AsyncAnthropic(base_url=base_url, auth_token="any", api_key=None,
                                      max_retries=0)
    messages: list[Any] = [{"role": "user", "content": ASK}]
    # This SDK (anthropic 2.15) has no temperature argument: vLLM takes it from the body.
    async with client.messages.stream(
            model=MODEL, max_tokens=96, extra_body={"temperature": 0}, messages=messages,
            tools=ANTHROPIC_TOOLS, tool_choice={"type": "tool", "name": "get_weather"}) as s:
        first = await s.get_final_message()
    (use,) = [b for b in first.content if b.type == "tool_use"]
    messages += [{"role": "assistant", "content": [b.model_dump(exclude_none=True)
                                                   for b in first.content]},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id,
                                               "content": RESULT}]}]
    second = await client.messages.create(model=MODEL, max_tokens=12,
                                          extra_body={"temperature": 0},
                                          messages=messages, tools=ANTHROPIC_TOOLS)
    counted = await client.messages.count_tokens(model=MODEL, messages=messages,
                                                 tools=ANTHROPIC_TOOLS)
    await client.close()
    return {"tool": use.name, "input": use.input, "stop": first.stop_reason,
            "second": [b.model_dump() for b in second.content],
            "second_stop": second.stop_reason, "count": counted.input_tokens,
            # Anthropic's input_tokens leaves out the prompt-cache hits and writes
            "usage": second.usage.input_tokens + (second.usage.cache_read_input_tokens or 0)
            + (second.usage.cache_creation_input_tokens or 0)}


async def test_anthropic_sdk_tool_use_result_and_count_same_as_direct(
        gateway_url: str, tiny_engine: TinyEngine) -> None:
    direct = await _claude_turns(tiny_engine.base_url)
    through = await _claude_turns(gateway_url)
    assert direct["tool"] == "get_weather" and set(direct["input"]) == {"city", "unit"}
    assert direct["count"] == direct["usage"]  # count_tokens counts what the turn used
    assert through == direct


async def _codex_turns(base_url: str) -> dict[str, Any]:
    client = openai.AsyncOpenAI(base_url=f"{base_url}/v1", api_key="any", max_retries=0)
    first = await client.responses.create(
        model=MODEL, input=ASK, tools=RESPONSES_TOOLS, temperature=0, max_output_tokens=96,
        tool_choice={"type": "function", "name": "get_weather"})
    (call,) = [i for i in first.output if i.type == "function_call"]
    given: list[Any] = [{"role": "user", "content": ASK}, call.model_dump(exclude_none=True),
                        {"type": "function_call_output", "call_id": call.call_id,
                         "output": RESULT}]
    second = await client.responses.create(model=MODEL, input=given, tools=RESPONSES_TOOLS,
                                           temperature=0, max_output_tokens=12)
    await client.close()
    return {"name": call.name, "arguments": json.loads(call.arguments),
            "second": second.output_text, "second_status": second.status,
            "usage": second.usage.input_tokens if second.usage else None}


async def test_openai_sdk_responses_call_and_output_item_same_as_direct(
        gateway_url: str, tiny_engine: TinyEngine) -> None:
    direct = await _codex_turns(tiny_engine.base_url)
    through = await _codex_turns(gateway_url)
    assert direct["name"] == "get_weather" and set(direct["arguments"]) == {"city", "unit"}
    assert direct["usage"]  # turn two, with the call and its output, was a real prompt
    assert through == direct


async def test_openai_sdk_chat_same_as_direct(gateway_url: str, tiny_engine: TinyEngine
                                              ) -> None:
    async def chat(base_url: str) -> Any:
        client = openai.AsyncOpenAI(base_url=f"{base_url}/v1", api_key="any", max_retries=0)
        reply = await client.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": ASK}], temperature=0,
            max_tokens=96, tools=[{"type": "function", "function": {
                "name": n, "parameters": SCHEMAS[n]}} for n in SCHEMAS],
            tool_choice={"type": "function", "function": {"name": "get_weather"}})
        (call,) = reply.choices[0].message.tool_calls or []
        await client.close()
        return call.function.name, json.loads(call.function.arguments)  # type: ignore[union-attr]

    assert await chat(gateway_url) == await chat(tiny_engine.base_url)


async def test_connect_settings_reach_the_real_engine(gateway_url: str) -> None:
    """`sm121 connect --agent claude-code` against the real gateway: the printed variables
    are what the anthropic SDK needs for a real answer."""
    result = await asyncio.to_thread(invoke_cli, "connect", gateway_url, "--agent",
                                     "claude-code", "--json")
    env = json.loads(result.stdout)["env"]
    client = anthropic.AsyncAnthropic(base_url=env["ANTHROPIC_BASE_URL"],
                                      auth_token=env["ANTHROPIC_AUTH_TOKEN"], api_key=None)
    reply = await client.messages.create(model=env["ANTHROPIC_MODEL"], max_tokens=4,
                                         messages=[{"role": "user", "content": "hi"}])
    await client.close()
    assert reply.usage.output_tokens >= 1


async def _samples(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    async with aiohttp.ClientSession() as http, http.get(f"{url}/metrics") as response:
        text = await response.text()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def _sum(samples: dict[Any, float], name: str, **labels: str) -> float:
    return sum(v for (n, ls), v in samples.items()
               if n == name and all(dict(ls).get(k) == x for k, x in labels.items()))


async def test_messages_and_responses_tokens_and_reuse_match_the_engines_counters(
        gateway_url: str, tiny_engine: TinyEngine) -> None:
    """Only this test's requests reach the engine between the two snapshots. A session of two
    turns on each protocol (the second extends the first): the gateway's per-protocol token
    counters equal the engine's prompt and generation counters, and its locality watch sees
    the second turn reuse what the engine's prefix cache then hits."""
    engine_before, gw_before = await _samples(tiny_engine.base_url), await _samples(gateway_url)
    filler = "Notes on the build: " + "the cache keeps every block it has seen. " * 40
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=300)) as http:
        for turn in range(2):  # append-only: turn 1 is turn 0 and two more messages
            ask: list[Any] = [{"role": "user", "content": filler},
                              {"role": "assistant", "content": "Noted."},
                              {"role": "user", "content": "turn 0"}]
            if turn:
                ask += [{"role": "assistant", "content": "Done."},
                        {"role": "user", "content": "turn 1"}]
            for path, body in (
                    ("/v1/messages", {"model": MODEL, "max_tokens": 6, "messages": ask,
                                      "stream": True}),
                    ("/v1/responses", {"model": MODEL, "max_output_tokens": 6, "input": ask})):
                async with http.post(f"{gateway_url}{path}", json=body, headers={
                        "X-Session-Id": f"protocols-{path}"}) as response:
                    assert response.status == 200, await response.text()
                    await response.read()
    await asyncio.sleep(1.0)  # the locality analyses run in the background
    engine_after, gw_after = await _samples(tiny_engine.base_url), await _samples(gateway_url)

    def delta(after: dict[Any, float], before: dict[Any, float], name: str, **labels: str
              ) -> float:
        return _sum(after, name, **labels) - _sum(before, name, **labels)

    gw_prompt = delta(gw_after, gw_before, "sm121_gateway_api_tokens_total", kind="prompt")
    gw_output = delta(gw_after, gw_before, "sm121_gateway_api_tokens_total", kind="completion")
    for api in ("messages", "responses"):
        assert delta(gw_after, gw_before, "sm121_gateway_api_tokens_total", api=api,
                     kind="prompt") > 0, api
    assert gw_prompt == delta(engine_after, engine_before, "vllm:prompt_tokens_total")
    assert gw_output == delta(engine_after, engine_before, "vllm:generation_tokens_total")
    sessions = {s["session"]: s for s in (await _locality(gateway_url))["sessions"]}
    predicted = 0
    for path in ("/v1/messages", "/v1/responses"):
        session = sessions[_digest(f"protocols-{path}")]
        assert session["requests"] == 2 and session["compared"] == 1, session
        assert session["last"]["reusable_fraction"] > 0.5, session
        predicted += session["last"]["reusable_tokens"]
    hits = delta(engine_after, engine_before, "vllm:prefix_cache_hits_total")
    # The engine hits at least what the watch says the second turns could reuse (it may hit
    # more: the second protocol's first turn shares the first protocol's prefix).
    assert hits >= predicted > 0


async def _locality(url: str) -> dict[str, Any]:
    async with aiohttp.ClientSession() as http, http.get(f"{url}/sm121/locality") as response:
        return await response.json()  # type: ignore[no-any-return]


def _digest(value: str) -> str:
    return session_id({DEFAULT_SESSION_HEADER: value}, {})
