"""Redaction: a canary string sent through every route, stream and not, is in no capture
file. The upstream is a purpose-built echo app: it puts the canary in every place an engine
can put text (deltas of every API, logprobs tokens and their bytes, top-logprobs keys,
/tokenize token strings, stop reasons), which a real engine does only by chance. The same
check against the real engine is tests/integration/test_gateway_redaction.py."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from gateway_harness import Running, running_gateway
from support import free_port

from sm121.gateway.config import CaptureSettings
from sm121.gateway.redact import redact

CANARY = "Zq7canaryXw"
CANARY_BYTES = list(CANARY.encode())
CANARY_IDS = [9001, 9002, 9003]


def _logprobs_chat() -> dict[str, Any]:
    entry = {"token": CANARY, "logprob": -0.1, "bytes": CANARY_BYTES}
    return {"content": [{**entry, "top_logprobs": [entry]}]}


def _logprobs_completions() -> dict[str, Any]:
    return {"tokens": [CANARY], "token_logprobs": [-0.1], "top_logprobs": [{CANARY: -0.1}],
            "text_offset": [0]}


def _chat(stream: bool) -> Any:
    tool = {"id": "call_1", "type": "function",
            "function": {"name": CANARY, "arguments": json.dumps({"q": CANARY})}}
    if not stream:
        return {"id": "cmpl-1", "object": "chat.completion", "model": "fake", "choices": [{
            "index": 0, "finish_reason": "stop", "stop_reason": CANARY,
            "logprobs": _logprobs_chat(),
            "message": {"role": "assistant", "content": CANARY, "reasoning_content": CANARY,
                        "tool_calls": [tool]}}],
            "prompt_logprobs": [None, {"9001": {"logprob": -1.0, "rank": 1,
                                                "decoded_token": CANARY}}],
            "usage": {"prompt_tokens": 7, "completion_tokens": 3}}
    return [{"object": "chat.completion.chunk", "choices": [{
        "index": 0, "delta": {"content": CANARY, "reasoning_content": CANARY,
                              "tool_calls": [tool]},
        "logprobs": _logprobs_chat(), "token_ids": CANARY_IDS}],
        "prompt_token_ids": CANARY_IDS}]


def _completions(stream: bool) -> Any:
    choice = {"index": 0, "text": CANARY, "logprobs": _logprobs_completions(),
              "finish_reason": "stop", "stop_reason": CANARY, "token_ids": CANARY_IDS}
    body = {"object": "text_completion", "model": "fake", "choices": [choice]}
    return [body] if stream else body


def _responses(stream: bool) -> Any:
    if not stream:
        return {"object": "response", "status": "completed", "output": [{
            "type": "message", "role": "assistant", "content": [
                {"type": "output_text", "text": CANARY, "logprobs": [
                    {"token": CANARY, "logprob": -0.1, "bytes": CANARY_BYTES}]}]}],
            "usage": {"input_tokens": 5, "output_tokens": 3}}
    return [{"type": "response.output_text.delta", "item_id": "msg_1", "delta": CANARY,
             "logprobs": [{"token": CANARY, "logprob": -0.1}]},
            {"type": "response.reasoning_text.delta", "delta": CANARY},
            {"type": "response.function_call_arguments.delta", "delta": CANARY},
            {"type": "response.output_text.done", "text": CANARY}]


_ANSWERS = {"/v1/chat/completions": _chat, "/v1/completions": _completions,
            "/v1/responses": _responses}


async def _answer(request: web.Request) -> web.StreamResponse:
    body = await request.json()
    answer = _ANSWERS[request.path](bool(body.get("stream")))
    if not body.get("stream"):
        return web.json_response(answer)
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    for event in answer:
        head = f"event: {event['type']}\n" if "type" in event else ""
        await response.write(f"{head}data: {json.dumps(event)}\n\n".encode())
    await response.write(f"data: {CANARY} not json\n\ndata: [DONE]\n\n".encode())
    await response.write_eof()
    return response


async def _tokenize(_: web.Request) -> web.Response:
    return web.json_response({"count": 3, "max_model_len": 4096, "tokens": CANARY_IDS,
                              "token_strs": [CANARY, CANARY, CANARY]})


async def _models(_: web.Request) -> web.Response:
    return web.json_response({"data": [{"id": "fake", "max_model_len": 4096}]})


@pytest.fixture
async def echo() -> AsyncIterator[str]:
    app = web.Application()
    for path in _ANSWERS:
        app.router.add_post(path, _answer)
    app.router.add_post("/tokenize", _tokenize)
    app.router.add_get("/v1/models", _models)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    yield f"http://127.0.0.1:{port}"
    await runner.cleanup()


def _requests(stream: bool) -> list[tuple[str, dict[str, Any]]]:
    common = {"model": "fake", "stream": stream, "stop": [CANARY], "user": CANARY,
              "metadata": {CANARY: CANARY}, "logit_bias": {"9001": 5}}
    tools = [{"type": "function", "function": {"name": "f", "description": CANARY,
                                               "parameters": {"type": "object", "properties": {
                                                   "q": {"type": "string", "enum": [CANARY]}}}}}]
    return [
        ("/v1/chat/completions", {**common, "tools": tools, "messages": [
            {"role": "system", "content": CANARY},
            {"role": "user", "name": CANARY, "content": [{"type": "text", "text": CANARY}]},
            {"role": "assistant", "tool_calls": [{"id": "c", "type": "function", "function": {
                "name": "f", "arguments": json.dumps({"q": CANARY})}}]},
            {"role": "tool", "tool_call_id": "c", "content": CANARY}]}),
        ("/v1/completions", {**common, "prompt": CANARY, "suffix": CANARY, "echo": True}),
        ("/v1/completions", {**common, "prompt": CANARY_IDS}),
        ("/v1/responses", {**common, "instructions": CANARY, "input": [
            {"role": "user", "content": [{"type": "input_text", "text": CANARY}]}]}),
        ("/tokenize", {"model": "fake", "prompt": CANARY, "return_token_strs": True}),
        ("/tokenize", {"model": "fake", "messages": [{"role": "user", "content": CANARY}]}),
    ]


async def _send_all(gw: Running) -> int:
    sent = 0
    for stream in (False, True):
        for path, body in _requests(stream):
            response = await gw.http.post(f"{gw.url}{path}", json=body)
            text = await response.text()
            assert response.status == 200, text
            assert CANARY in text  # the client gets its text: only the capture is redacted
            sent += 1
    return sent


async def test_canary_reaches_no_capture_file_on_any_route(echo: str, tmp_path: Path) -> None:
    async with running_gateway(echo, capture=CaptureSettings(tmp_path, redact=True)) as gw:
        sent = await _send_all(gw)
    files = list(tmp_path.iterdir())
    assert len(files) == 3 * sent
    for path in files:
        data = path.read_bytes()
        assert CANARY.encode() not in data, (path.name, data[:2000])
        assert json.dumps(CANARY_BYTES)[1:-1].encode() not in data, path.name
        assert b"9001, 9002, 9003" not in data, path.name
    everything = b"".join(f.read_bytes() for f in files)
    assert b'"role": "assistant"' in everything and b'"finish_reason": "stop"' in everything
    assert b"event: response.output_text.delta" in everything
    assert b'"completion_tokens": 3' in everything and b"[DONE]" in everything


def test_structure_stays_and_every_other_string_becomes_its_length() -> None:
    body = {"model": "m", "temperature": 0.2, "stream": True, "max_tokens": 5,
            "messages": [{"role": "user", "content": "abc"}], "stop": ["xy", "z"],
            "response_format": {"type": "json_schema"}, "prompt": [1, 2, 3],
            "top_logprobs": [{"tok": -0.5}], "metadata": {"who": "me"}}
    assert redact(body) == {
        "model": "m", "temperature": 0.2, "stream": True, "max_tokens": 5,
        "messages": [{"role": "user", "content": "[redacted 3 chars]"}],
        "stop": ["[redacted 2 chars]", "[redacted 1 chars]"],
        "response_format": {"type": "json_schema"}, "prompt": "[redacted 3 token ids]",
        "top_logprobs": [{"[redacted key 0: 3 chars]": -0.5}],
        "metadata": {"[redacted key 0: 3 chars]": "[redacted 2 chars]"}}


def _schema_request() -> dict[str, Any]:
    """A canary as a name a JSON schema defines: tool parameters (nested, $defs, pattern and
    dependent properties) and a response format's fields."""
    named = {"type": "object", "properties": {CANARY: {"type": "string"}},
             "required": [CANARY]}
    schema = {"type": "object", "properties": {
        CANARY: {"type": "object", "properties": {CANARY: {"$ref": f"#/$defs/{CANARY}"}}},
        "properties": named},
        "patternProperties": {f"^{CANARY}": {"type": "number"}},
        "dependentRequired": {CANARY: [CANARY]}, "$defs": {CANARY: named}}
    return {"model": "fake", "messages": [{"role": "user", "content": "hi"}],
            "tools": [{"type": "function", "function": {"name": "f", "parameters": schema}}],
            "response_format": {"type": "json_schema",
                                "json_schema": {"name": "r", "schema": named}}}


async def test_redacted_capture_keeps_no_client_header_query_or_schema_name(
        echo: str, tmp_path: Path) -> None:
    headers = {"X-Goog-Api-Key": CANARY, "OpenAI-Organization": CANARY, "X-Custom": CANARY,
               "x-session-id": CANARY, "User-Agent": "agent/1.0"}
    async with running_gateway(echo, capture=CaptureSettings(tmp_path, redact=True)) as gw:
        response = await gw.http.post(f"{gw.url}/v1/chat/completions?api-key={CANARY}",
                                      json=_schema_request(), headers=headers)
        assert response.status == 200, await response.text()
    for path in tmp_path.iterdir():
        assert CANARY.encode() not in path.read_bytes(), (path.name, path.read_bytes()[:2000])
    meta = json.loads(next(tmp_path.glob("*.meta.json")).read_text())
    assert meta["path"] == "/v1/chat/completions"
    kept = {k.lower(): v for k, v in meta["request_headers"].items()}
    assert "x-goog-api-key" not in kept and "openai-organization" not in kept
    assert "x-custom" not in kept and kept["user-agent"] == "agent/1.0"
    # The session header is the digest its session id is made of: the turns still group.
    assert meta["session"] == f"h:{kept['x-session-id']}"
    request = json.loads(next(tmp_path.glob("*.request")).read_text())
    params = request["tools"][0]["function"]["parameters"]
    assert params["type"] == "object" and len(params["properties"]) == 2


async def test_unredacted_capture_still_drops_every_credential_header(
        echo: str, tmp_path: Path) -> None:
    headers = {"X-Goog-Api-Key": CANARY, "OpenAI-Organization": CANARY,
               "X-Auth-Token": CANARY, "Anthropic-Api-Key": CANARY, "X-Custom": "kept"}
    async with running_gateway(echo, capture=CaptureSettings(tmp_path, redact=False)) as gw:
        response = await gw.http.post(f"{gw.url}/v1/chat/completions",
                                      json=_schema_request(), headers=headers)
        assert response.status == 200
    meta = json.loads(next(tmp_path.glob("*.meta.json")).read_text())
    assert CANARY not in json.dumps(meta["request_headers"])
    assert meta["request_headers"]["X-Custom"] == "kept"


def test_schema_names_are_redacted_and_schema_keywords_stay() -> None:
    schema = {"type": "object", "properties": {"ssn": {"type": "string", "enum": ["a"]}},
              "required": ["ssn"], "additionalProperties": False}
    assert redact({"parameters": schema}) == {"parameters": {
        "type": "object",
        "properties": {"[redacted key 0: 3 chars]": {"type": "string",
                                                      "enum": ["[redacted 1 chars]"]}},
        "required": ["[redacted 3 chars]"], "additionalProperties": False}}
