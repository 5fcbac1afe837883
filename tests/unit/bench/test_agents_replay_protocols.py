"""`bench replay` of a captured Anthropic Messages or Responses session: sent again in its own
protocol, with the conversation the engine renders unchanged (a recording fake engine
answers each protocol's stream; the point is what the replay sends)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from support.aiohttp_server import served

from sm121.bench.client import BenchClient
from sm121.bench.context import Context
from sm121.bench.results import ResultsFile
from sm121.bench.scenarios.agents.replay import ReplayArgs, replay
from sm121.gateway.capture import Capture
from sm121.gateway.sessions import session_id
from sm121.protocols.chat_view import messages_to_chat, responses_to_chat

TOOLS = [{"name": "read", "input_schema": {"type": "object", "properties": {
    "path": {"type": "string"}}}}]
MESSAGES_TURNS = [
    {"model": "m", "max_tokens": 3, "system": "You are careful.", "tools": TOOLS,
     "messages": [{"role": "user", "content": "read a.py"}]},
    {"model": "m", "max_tokens": 3, "system": "You are careful.", "tools": TOOLS,
     "messages": [{"role": "user", "content": "read a.py"},
                  {"role": "assistant", "content": [
                      {"type": "tool_use", "id": "t1", "name": "read", "input": {"path": "a"}}]},
                  {"role": "user", "content": [
                      {"type": "tool_result", "tool_use_id": "t1", "content": "x = 1"}]}]},
]
RESPONSES_TURNS = [
    {"model": "m", "max_output_tokens": 3, "instructions": "Be brief.", "input": "read a.py"},
    {"model": "m", "max_output_tokens": 3, "instructions": "Be brief.", "input": [
        {"role": "user", "content": "read a.py"},
        {"type": "function_call", "call_id": "c1", "name": "read", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "x = 1"}]},
]


def _capture(folder: Path, path: str, turns: list[dict[str, Any]]) -> None:
    capture = Capture(folder, False)
    for turn, body in enumerate(turns):
        record = capture.start(f"t{turn}", "POST", path, {}, json.dumps(body).encode())
        record.note(session=session_id({"x-session-id": "agent"}, {}), arrived=turn * 0.1,
                    queue_wait_s=0.0, api=path.rsplit("/", 1)[1])
        record.response_head(200, {"Content-Type": "text/event-stream"})
        record.note(prompt_tokens=None, completion_tokens=3)
        record.finish("ok")


@pytest.fixture
async def engine() -> AsyncIterator[tuple[str, list[tuple[str, dict[str, Any]]]]]:
    seen: list[tuple[str, dict[str, Any]]] = []

    async def stream(request: web.Request, events: list[dict[str, Any]]) -> web.StreamResponse:
        seen.append((request.path, await request.json()))
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for event in events:
            await response.write(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())
        return response

    async def messages(request: web.Request) -> web.StreamResponse:
        delta = {"type": "content_block_delta", "index": 0,
                 "delta": {"type": "text_delta", "text": "x"}}
        return await stream(request, [
            {"type": "message_start", "message": {"usage": {"input_tokens": 9,
                                                            "output_tokens": 0}}},
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text"}},
            delta, delta, delta,
            {"type": "message_delta", "delta": {"stop_reason": "max_tokens"},
             "usage": {"output_tokens": 3}}, {"type": "message_stop"}])

    async def responses(request: web.Request) -> web.StreamResponse:
        delta = {"type": "response.output_text.delta", "delta": "x"}
        return await stream(request, [delta, delta, delta, {
            "type": "response.completed", "response": {"status": "incomplete", "usage": {
                "input_tokens": 9, "output_tokens": 3}}}])

    async def tokenize(request: web.Request) -> web.Response:
        return web.json_response({"count": 9, "tokens": list(range(9))})

    app = web.Application()
    app.router.add_post("/v1/messages", messages)
    app.router.add_post("/v1/responses", responses)
    app.router.add_post("/tokenize", tokenize)
    async with served(app) as url:
        yield url, seen


@pytest.mark.parametrize(("path", "turns", "view"), [
    ("/v1/messages", MESSAGES_TURNS, messages_to_chat),
    ("/v1/responses", RESPONSES_TURNS, responses_to_chat)], ids=["messages", "responses"])
async def test_a_captured_session_replays_in_its_own_protocol(
        tmp_path: Path, engine: tuple[str, list[tuple[str, dict[str, Any]]]], path: str,
        turns: list[dict[str, Any]], view: Any) -> None:
    url, seen = engine
    folder = tmp_path / "cap"
    _capture(folder, path, turns)
    params = {"capture_dir": str(folder), "speed": 10.0, "slo": "ttft_p95=2s"}
    results = ResultsFile(tmp_path / "replay.json", "scenario", "replay", params)
    async with BenchClient(url, "m", api="chat") as client:
        outcome = await replay(Context(client, results, {}), ReplayArgs.model_validate(params))
    assert outcome.turns == 2 and outcome.usage_checked == 2
    assert [p for p, _ in seen] == [path, path]
    for (_, sent), captured in zip(seen, turns, strict=True):
        # What the engine renders is what the agent sent.
        assert view(sent)["messages"] == view(captured)["messages"]
        assert view(sent).get("tools") == view(captured).get("tools")
