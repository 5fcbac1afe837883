"""A recipe's request defaults, followed to the bytes the upstream receives: a real gateway
in front of a fake recording upstream (it keeps each request body exactly as it arrived).

The defaults were applied to the decoded body, but that body was sent only when a parameter
had also been stripped: a tool-bearing request without repetition_penalty reached the engine
with no tool_choice. Unit tests of apply_policy alone could not see it."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest
from aiohttp import web
from gateway_harness import POLICY, running_gateway
from support import free_port

from sm121.recipes.schema import RequestDefaults

DEFAULTS = POLICY.model_copy(update={"defaults": RequestDefaults(
    tool_choice="auto", parallel_tool_calls=False, chat_template_kwargs={"thinking": True})})
TOOLS = [{"type": "function", "function": {"name": "read_file", "parameters": {
    "type": "object", "properties": {"path": {"type": "string"}}}}}]


@dataclass
class RecordingUpstream:
    """Answers like an engine, and records every generation request's body bytes."""

    url: str = ""
    received: list[bytes] = field(default_factory=list)


@pytest.fixture
async def recording() -> AsyncIterator[RecordingUpstream]:
    upstream = RecordingUpstream()

    async def generate(request: web.Request) -> web.Response:
        upstream.received.append(await request.read())
        return web.json_response({"object": "chat.completion", "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "ok"}}]})

    async def models(_: web.Request) -> web.Response:
        return web.json_response({"data": [{"id": "fake", "max_model_len": 4096}]})

    app = web.Application()
    app.router.add_post("/v1/chat/completions", generate)
    app.router.add_post("/v1/completions", generate)
    app.router.add_post("/v1/messages", generate)
    app.router.add_post("/v1/responses", generate)
    app.router.add_get("/v1/models", models)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    upstream.url = f"http://127.0.0.1:{port}"
    yield upstream
    await runner.cleanup()


async def _send(url: str, path: str, raw: bytes) -> None:
    import aiohttp

    async with aiohttp.ClientSession() as http:
        response = await http.post(f"{url}{path}", data=raw,
                                   headers={"Content-Type": "application/json"})
        assert response.status == 200, await response.text()


async def test_a_tool_request_without_stripped_params_reaches_the_upstream_with_the_defaults(
        recording: RecordingUpstream) -> None:
    body = {"model": "fake", "messages": [{"role": "user", "content": "read a.py"}],
            "tools": TOOLS}
    async with running_gateway(recording.url, policy=DEFAULTS) as gw:
        await _send(gw.url, "/v1/chat/completions", json.dumps(body).encode())
        stripped = {**body, "repetition_penalty": 2.0}
        await _send(gw.url, "/v1/chat/completions", json.dumps(stripped).encode())
    for received in recording.received:
        sent = json.loads(received)
        assert sent["tool_choice"] == "auto" and sent["parallel_tool_calls"] is False
        assert sent["chat_template_kwargs"] == {"thinking": True}
        assert "repetition_penalty" not in sent
        assert sent["tools"] == TOOLS and sent["messages"] == body["messages"]


async def test_a_body_policy_leaves_alone_goes_as_the_client_sent_its_bytes(
        recording: RecordingUpstream) -> None:
    """Nothing supplied, nothing stripped: the client's own bytes, spacing and key order."""
    chat = b'{ "messages":[{"content":"hi","role":"user"}],"model":"fake",\n"tool_choice":"none"}'
    prompt = b'{"prompt": "hi",   "model": "fake", "repetition_penalty": 1.0}'  # neutral
    async with running_gateway(recording.url, policy=POLICY) as gw:
        await _send(gw.url, "/v1/chat/completions", chat)
        await _send(gw.url, "/v1/completions", prompt)
    assert recording.received == [chat, prompt]


SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}}
# Each protocol's tool-bearing request without tool_choice, and the defaults as that protocol
# spells them when they reach the engine.
PER_PROTOCOL = {
    "chat": ("/v1/chat/completions",
             {"model": "fake", "messages": [{"role": "user", "content": "read a.py"}],
              "tools": TOOLS},
             {"tool_choice": "auto", "parallel_tool_calls": False,
              "chat_template_kwargs": {"thinking": True}}),
    "responses": ("/v1/responses",
                  {"model": "fake", "input": "read a.py", "tools": [
                      {"type": "function", "name": "read_file", "parameters": SCHEMA}]},
                  {"tool_choice": "auto", "parallel_tool_calls": False,
                   "chat_template_kwargs": {"thinking": True}}),
    "messages": ("/v1/messages",
                 {"model": "fake", "max_tokens": 16, "tools": [
                     {"name": "read_file", "input_schema": SCHEMA}],
                  "messages": [{"role": "user", "content": "read a.py"}]},
                 {"tool_choice": {"type": "auto", "disable_parallel_tool_use": True},
                  "chat_template_kwargs": {"thinking": True}}),
    "completions": ("/v1/completions", {"model": "fake", "prompt": "read a.py"}, {}),
}


@pytest.mark.parametrize("api", list(PER_PROTOCOL))
async def test_each_protocol_receives_the_defaults_in_its_own_spelling(
        recording: RecordingUpstream, api: str) -> None:
    path, body, expected = PER_PROTOCOL[api]
    async with running_gateway(recording.url, policy=DEFAULTS) as gw:
        await _send(gw.url, path, json.dumps(body).encode())
    (received,) = recording.received
    assert json.loads(received) == {**body, **expected}
    if not expected:  # nothing to supply: the client's own bytes
        assert received == json.dumps(body).encode()
