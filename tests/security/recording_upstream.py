"""A fake upstream, named as such: an aiohttp server on its own thread and loop that records
the exact bytes of every request body it receives and answers each protocol's route with a
canned body of that protocol (chat, Anthropic Messages, Responses). It stands in for the
engine only where the point is what the gateway sends and writes (the upstream's bytes, the
capture files), not what an engine would answer."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from support import free_port


@dataclass
class RecordingUpstream:
    answers: dict[str, Any]  # path -> the JSON body to answer with
    model: str = "fake"
    received: list[tuple[str, bytes]] = field(default_factory=list)  # (path, raw body)
    port: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def bodies(self, path: str) -> list[bytes]:
        return [raw for p, raw in self.received if p == path]

    def app(self) -> web.Application:
        app = web.Application()
        for path in self.answers:
            app.router.add_post(path, self._answer)
        app.router.add_get("/v1/models", self._models)
        app.router.add_get("/health", self._health)
        app.router.add_get("/metrics", self._metrics)
        app.router.add_post("/tokenize", self._tokenize)
        return app

    async def _answer(self, request: web.Request) -> web.Response:
        self.received.append((request.path, await request.read()))
        return web.json_response(self.answers[request.path])

    async def _health(self, _: web.Request) -> web.Response:
        return web.Response(text="")

    async def _metrics(self, _: web.Request) -> web.Response:
        return web.Response(text='vllm:cache_config_info{block_size="16"} 1\n')

    async def _models(self, _: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [
            {"id": self.model, "object": "model", "max_model_len": 4096}]})

    async def _tokenize(self, request: web.Request) -> web.Response:
        tokens = list(json.dumps(await request.json()).encode())
        return web.json_response({"count": len(tokens), "max_model_len": 4096,
                                  "tokens": tokens})


@contextmanager
def recording_upstream(answers: dict[str, Any]) -> Iterator[RecordingUpstream]:
    """Serve on its own thread, so it answers the gateway's probes while the test blocks."""
    upstream = RecordingUpstream(answers)
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="recording-upstream", daemon=True)
    thread.start()

    async def start() -> web.AppRunner:
        runner = web.AppRunner(upstream.app())
        await runner.setup()
        upstream.port = free_port()
        await web.TCPSite(runner, "127.0.0.1", upstream.port).start()
        return runner

    runner = asyncio.run_coroutine_threadsafe(start(), loop).result(timeout=60)
    try:
        yield upstream
    finally:
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(timeout=60)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=60)
        loop.close()
