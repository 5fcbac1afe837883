"""The gateway's token metrics on Anthropic Messages, through a real gateway in front of a fake
engine that streams Messages events (or answers one body) with Anthropic's usage: the input
in message_start, the output in message_delta, cached prompt tokens counted apart.

The fake is a fake: it answers with fixed events, not a model."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from gateway_harness import Running, running_gateway
from support import free_port

DELTAS = 400  # enough text that message_start lies outside the tail the gateway keeps
BODY = {"model": "fake", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}


def _event(name: str, data: dict[str, object]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


async def _messages(request: web.Request) -> web.StreamResponse:
    body = await request.json()
    if not body.get("stream"):
        return web.json_response({"type": "message", "role": "assistant", "content": [
            {"type": "text", "text": "ok"}], "usage": {
                "input_tokens": 3, "cache_read_input_tokens": 32, "output_tokens": 2}})
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    await response.write(_event("message_start", {"type": "message_start", "message": {
        "type": "message", "role": "assistant", "content": [],
        "usage": {"input_tokens": 11, "output_tokens": 1}}}))
    for index in range(DELTAS):
        await response.write(_event("content_block_delta", {
            "type": "content_block_delta", "index": 0,
            "delta": {"type": "text_delta", "text": f"token number {index} "}}))
    await response.write(_event("message_delta", {"type": "message_delta", "delta": {
        "stop_reason": "end_turn"}, "usage": {"output_tokens": DELTAS}}))
    await response.write(_event("message_stop", {"type": "message_stop"}))
    await response.write_eof()
    return response


async def _models(_: web.Request) -> web.Response:
    return web.json_response({"data": [{"id": "fake", "max_model_len": 4096}]})


@pytest.fixture
async def gw() -> AsyncIterator[Running]:
    app = web.Application()
    app.router.add_post("/v1/messages", _messages)
    app.router.add_get("/v1/models", _models)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    async with running_gateway(f"http://127.0.0.1:{port}") as running:
        yield running
    await runner.cleanup()


async def test_streamed_messages_usage_is_counted(gw: Running) -> None:
    response = await gw.http.post(f"{gw.url}/v1/messages", json={**BODY, "stream": True})
    text = await response.text()
    assert response.status == 200 and text.count("event: content_block_delta") == DELTAS
    assert await gw.metric("sm121_gateway_tokens_total", kind="prompt") == 11
    assert await gw.metric("sm121_gateway_tokens_total", kind="completion") == DELTAS


async def test_messages_body_counts_cached_prompt_tokens(gw: Running) -> None:
    response = await gw.http.post(f"{gw.url}/v1/messages", json=BODY)
    assert response.status == 200
    assert await gw.metric("sm121_gateway_tokens_total", kind="prompt") == 35
    assert await gw.metric("sm121_gateway_tokens_total", kind="completion") == 2
