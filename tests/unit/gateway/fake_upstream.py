"""A purpose-built fake upstream for the gateway's fault tests: an in-process aiohttp server
that speaks just enough of vLLM's API (streams, /v1/models, /tokenize, /metrics) and can be
told to misbehave: die mid-stream, flood a slow client, stall before answering, hang (a
killed engine whose sockets are still open: nothing streams and nothing answers), or answer
/health late while it serves.

It is not a stand-in for the engine where the engine can run: behaviour against real vLLM is
tested in tests/integration/test_gateway_*.py.
"""

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

MAX_MODEL_LEN = 4096
BLOCK_SIZE = 16


@web.middleware
async def _refuse_bad_bodies(request: web.Request, handler: Any) -> web.StreamResponse:
    """A body the fake cannot read gets a 400, as vLLM's own validation gives (fuzz tests
    send such bodies on purpose)."""
    try:
        return await handler(request)
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
        return web.json_response({"error": {"message": repr(exc), "type": "BadRequestError",
                                            "code": 400}}, status=400)


@dataclass
class FakeUpstream:
    mode: str = "normal"  # normal | die | flood | stall | hang
    model: str = "fake"
    chunks: int = 5
    interval_s: float = 0.0
    prefill_s_per_1k: float = 0.0  # "prefill": a delay before the first byte, per 1,000 chars
    flood_bytes: int = 0
    # /health answers this much later while every other route answers at once: a health
    # check that outlasts the gateway's timeout on an engine that is serving.
    health_delay_s: float = 0.0
    pool_blocks: int | None = None  # the KV pool its /metrics reports (None: not reported)
    metrics_page: str | None = None  # a whole /metrics page to serve instead (a fixture's)
    bodies: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    tokenize_calls: int = 0
    requests: int = 0
    bytes_sent: int = 0
    cancelled: asyncio.Event = field(default_factory=asyncio.Event)
    finished: asyncio.Event = field(default_factory=asyncio.Event)
    port: int = 0
    _runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self, port: int | None = None) -> FakeUpstream:
        app = web.Application(client_max_size=1 << 30, middlewares=[_refuse_bad_bodies])
        app.router.add_post("/v1/chat/completions", self._generate)
        app.router.add_post("/v1/completions", self._generate)
        # Chat-shaped chunks on the other protocols' routes: enough for what the gateway adds
        # (its error event when the upstream dies), not a Messages or Responses engine.
        app.router.add_post("/v1/messages", self._generate)
        app.router.add_post("/v1/responses", self._generate)
        app.router.add_get("/v1/models", self._models)
        app.router.add_post("/tokenize", self._tokenize)
        app.router.add_get("/metrics", self._metrics)
        app.router.add_get("/health", self._health)
        self._runner = web.AppRunner(app, handler_cancellation=True)
        await self._runner.setup()
        self.port = port or free_port()
        await web.TCPSite(self._runner, "127.0.0.1", self.port).start()
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _models(self, _: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [
            {"id": self.model, "object": "model", "max_model_len": MAX_MODEL_LEN}]})

    async def _health(self, _: web.Request) -> web.Response:
        await self._hang_if_told()
        if self.health_delay_s:
            await asyncio.sleep(self.health_delay_s)
        return web.Response(status=200)

    async def _hang_if_told(self) -> None:
        if self.mode == "hang":
            await asyncio.sleep(3600)

    async def _metrics(self, _: web.Request) -> web.Response:
        if self.metrics_page is not None:
            return web.Response(text=self.metrics_page)
        pool = f'num_gpu_blocks="{self.pool_blocks}",' if self.pool_blocks else ""
        return web.Response(text=f'vllm:cache_config_info{{block_size="{BLOCK_SIZE}",'
                                 f'{pool}engine="0"}} 1.0\n')

    async def _tokenize(self, request: web.Request) -> web.Response:
        """One token per byte of the rendered text, like a byte-level tokenizer."""
        self.tokenize_calls += 1
        body = await request.json()
        if "messages" in body:
            text = json.dumps(body.get("tools")) + "".join(
                f"<{m['role']}>{m.get('content') or ''}" for m in body["messages"])
        else:
            text = body["prompt"]
        tokens = list(text.encode())
        return web.json_response({"count": len(tokens), "max_model_len": MAX_MODEL_LEN,
                                  "tokens": tokens})

    async def _generate(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.bodies.append(body)
        self.requests += 1
        self.headers.append(dict(request.headers))
        if not body.get("stream"):
            return web.json_response({"id": "cmpl-1", "object": "chat.completion", "choices": [
                {"index": 0, "message": {"role": "assistant", "content": "hello"}}],
                "usage": {"prompt_tokens": 7, "completion_tokens": 3}},
                headers={"X-Upstream-Marker": "yes"})
        try:
            if self.mode in ("stall", "hang"):
                await asyncio.sleep(3600)
            await asyncio.sleep(len(json.dumps(body)) / 1000 * self.prefill_s_per_1k)
            return await self._stream(request)
        except asyncio.CancelledError:
            self.cancelled.set()
            raise
        finally:
            self.finished.set()

    async def _stream(self, request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream",
                                               "X-Upstream-Marker": "yes"})
        await response.prepare(request)
        if self.mode == "flood":
            return await self._flood(response)
        for index in range(self.chunks):
            chunk = {"id": "c", "object": "chat.completion.chunk",
                     "choices": [{"index": 0, "delta": {"content": f"tok{index} "}}]}
            await self._hang_if_told()
            await response.write(f"data: {json.dumps(chunk)}\n\n".encode())
            if self.mode == "die" and index == 1:
                assert request.transport is not None
                request.transport.abort()  # the engine crashed: no end of stream
                return response
            if self.interval_s:
                await asyncio.sleep(self.interval_s)
        usage = {"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": self.chunks}}
        await response.write(f"data: {json.dumps(usage)}\n\ndata: [DONE]\n\n".encode())
        await response.write_eof()
        return response

    async def _flood(self, response: web.StreamResponse) -> web.StreamResponse:
        """As much as the connection takes: each write waits for the socket to drain, so
        bytes_sent counts only what the gateway accepted."""
        payload = b"data: " + b"x" * 65_000 + b"\n\n"
        while self.bytes_sent < self.flood_bytes:
            await response.write(payload)
            self.bytes_sent += len(payload)
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response


@contextmanager
def in_its_own_thread(fake: FakeUpstream) -> Iterator[FakeUpstream]:
    """`fake`, started on its own loop and thread: it answers the gateway (its /health probes
    too) while the test's own loop stands still (hypothesis building a batch, a blocking
    call). Its fields are read across threads: counters only, no awaiting its events."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="fake-upstream", daemon=True)
    thread.start()
    started = asyncio.run_coroutine_threadsafe(fake.start(), loop).result(timeout=60)
    try:
        yield started
    finally:
        asyncio.run_coroutine_threadsafe(fake.stop(), loop).result(timeout=60)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=60)
        loop.close()
