"""A fake engine that answers each generation protocol in its own reply shape (chat
completions, Anthropic Messages, Responses), well enough for the real anthropic and openai
SDKs to parse, and records every request (path, headers, body) as it arrived.

For what a client's settings reach (URL, path, key header, model), not for what an engine
does: against real vLLM that is tests/integration/test_gateway_protocols_sdk.py."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from support import free_port


@dataclass
class Seen:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class FakeProtocolEngine:
    model: str = "fake"
    seen: list[Seen] = field(default_factory=list)
    url: str = ""
    _runner: web.AppRunner | None = None

    async def start(self) -> FakeProtocolEngine:
        app = web.Application()
        app.router.add_get("/v1/models", self._models)
        app.router.add_get("/health", self._health)
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/v1/messages", self._messages)
        app.router.add_post("/v1/messages/count_tokens", self._count_tokens)
        app.router.add_post("/v1/responses", self._responses)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        port = free_port()
        await web.TCPSite(self._runner, "127.0.0.1", port).start()
        self.url = f"http://127.0.0.1:{port}"
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _record(self, request: web.Request) -> dict[str, Any]:
        body = json.loads(await request.read())
        self.seen.append(Seen(request.path, dict(request.headers), body))
        return dict(body)

    async def _models(self, _: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [
            {"id": self.model, "object": "model", "max_model_len": 4096}]})

    async def _health(self, _: web.Request) -> web.Response:
        return web.Response()

    async def _chat(self, request: web.Request) -> web.Response:
        body = await self._record(request)
        return web.json_response({
            "id": "chatcmpl-1", "object": "chat.completion", "created": 1,
            "model": body.get("model"), "choices": [
                {"index": 0, "finish_reason": "stop",
                 "message": {"role": "assistant", "content": "hello"}}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}})

    async def _messages(self, request: web.Request) -> web.Response:
        body = await self._record(request)
        return web.json_response({
            "id": "msg_1", "type": "message", "role": "assistant", "model": body.get("model"),
            "content": [{"type": "text", "text": "hello"}], "stop_reason": "end_turn",
            "stop_sequence": None, "usage": {"input_tokens": 3, "output_tokens": 1}})

    async def _count_tokens(self, request: web.Request) -> web.Response:
        await self._record(request)
        return web.json_response({"input_tokens": 3})

    async def _responses(self, request: web.Request) -> web.Response:
        body = await self._record(request)
        return web.json_response({
            "id": "resp_1", "object": "response", "created_at": 1, "model": body.get("model"),
            "status": "completed", "parallel_tool_calls": True, "tool_choice": "auto",
            "tools": [], "output": [{
                "type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": "hello", "annotations": []}]}],
            "usage": {"input_tokens": 3, "output_tokens": 1, "total_tokens": 4,
                      "input_tokens_details": {"cached_tokens": 0},
                      "output_tokens_details": {"reasoning_tokens": 0}}})
