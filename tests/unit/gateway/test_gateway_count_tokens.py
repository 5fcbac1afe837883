"""Anthropic's /v1/messages/count_tokens through a real gateway, in front of two fake engines
that record each request as it arrived (path, headers, body bytes). Claude Code asks it
before a turn; vLLM 0.32 serves it, and the gateway answered it with its own 404.

The fakes are fakes: they answer like vLLM's route (`{"input_tokens": N}`), nothing more. The
same route against the real engine belongs to the integration tests."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import aiohttp
import pytest
from aiohttp import web
from gateway_harness import Running, discovered, running_gateway
from support import free_port

from sm121.gateway.config import RoutingSettings, UpstreamSpec

PATH = "/v1/messages/count_tokens"
FAST = RoutingSettings(health_interval_s=0.1, readmit_after_s=0.3)
# As a client may encode it: odd spacing and key order, which a re-encoding would change.
BODY = (b'{"messages": [{"role":"user","content":"count me"}],  "model":"%s",'
        b'"system":"be brief"}')


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class FakeAnthropicEngine:
    """Serves one model: /v1/models, /health, and count_tokens (one token per body byte)."""

    model: str
    url: str = ""
    received: list[Received] = field(default_factory=list)
    runner: web.AppRunner | None = None

    async def start(self) -> FakeAnthropicEngine:
        app = web.Application()
        app.router.add_post(PATH, self._count_tokens)
        app.router.add_get("/v1/models", self._models)
        app.router.add_get("/health", self._health)
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        port = free_port()
        await web.TCPSite(self.runner, "127.0.0.1", port).start()
        self.url = f"http://127.0.0.1:{port}"
        return self

    async def _count_tokens(self, request: web.Request) -> web.Response:
        raw = await request.read()
        self.received.append(Received(request.path_qs, dict(request.headers), raw))
        return web.json_response({"input_tokens": len(raw)},
                                 headers={"X-Fake-Engine": self.model})

    async def _health(self, _: web.Request) -> web.Response:
        return web.Response()

    async def _models(self, _: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [
            {"id": self.model, "object": "model", "max_model_len": 4096}]})


@pytest.fixture
async def engines() -> AsyncIterator[tuple[FakeAnthropicEngine, FakeAnthropicEngine]]:
    first = await FakeAnthropicEngine("model-a").start()
    second = await FakeAnthropicEngine("model-b").start()
    yield first, second
    for engine in (first, second):
        assert engine.runner is not None
        await engine.runner.cleanup()


def _specs(*engines: FakeAnthropicEngine) -> tuple[UpstreamSpec, ...]:
    return tuple(UpstreamSpec(url=e.url, name=f"engine-{i}") for i, e in enumerate(engines))


async def _count(gw: Running, raw: bytes, **headers: str) -> aiohttp.ClientResponse:
    return await gw.http.post(f"{gw.url}{PATH}", data=raw, headers={
        "Content-Type": "application/json", "anthropic-version": "2023-06-01", **headers})


async def test_count_tokens_reaches_the_replica_of_its_model_byte_for_byte(
        engines: tuple[FakeAnthropicEngine, FakeAnthropicEngine]) -> None:
    first, second = engines
    async with running_gateway(upstreams=_specs(first, second), routing=FAST) as gw:
        await discovered(gw, 2)
        for engine in (second, first):
            raw = BODY % engine.model.encode()
            response = await _count(gw, raw)
            assert response.status == 200, await response.text()
            assert await response.json() == {"input_tokens": len(raw)}
            assert response.headers["X-Fake-Engine"] == engine.model
            assert [(r.path, r.body) for r in engine.received] == [(PATH, raw)]
            assert engine.received[0].headers["anthropic-version"] == "2023-06-01"
        assert await gw.metric("sm121_gateway_requests_total", route=PATH,
                               status="200") == 2
        # Not a generation: no admission, no queue, no tokens counted.
        assert await gw.metric("sm121_gateway_tokens_total", kind="prompt") == 0


async def test_count_tokens_needs_the_gateway_key_which_never_reaches_the_engine(
        engines: tuple[FakeAnthropicEngine, FakeAnthropicEngine]) -> None:
    first, _ = engines
    async with running_gateway(first.url, api_keys=("gateway-key",),
                               upstream_api_key="engine-key") as gw:
        raw = BODY % b"model-a"
        refused = await _count(gw, raw)
        assert refused.status == 401 and first.received == []
        response = await _count(gw, raw, Authorization="Bearer gateway-key")
        assert response.status == 200
        assert await response.json() == {"input_tokens": len(raw)}
        assert first.received[0].headers["Authorization"] == "Bearer engine-key"
        assert first.received[0].body == raw


async def test_a_key_in_x_api_key_reaches_the_engine_only_from_a_keyless_gateway(
        engines: tuple[FakeAnthropicEngine, FakeAnthropicEngine]) -> None:
    """Anthropic clients (Claude Code with ANTHROPIC_API_KEY) send their key as X-Api-Key.
    A gateway with keys of its own relayed it as it came: the client's key reached the engine.
    Without gateway keys it may be meant for the engine, like Authorization, and passes."""
    first, _ = engines
    raw = BODY % b"model-a"
    async with running_gateway(first.url, api_keys=("gateway-key",)) as gw:
        response = await _count(gw, raw, Authorization="Bearer gateway-key",
                                **{"X-Api-Key": "gateway-key"})
        assert response.status == 200
        assert "x-api-key" not in {k.lower() for k in first.received[-1].headers}
    async with running_gateway(first.url) as gw:
        response = await _count(gw, raw, **{"X-Api-Key": "engine-key"})
        assert response.status == 200
        assert first.received[-1].headers["X-Api-Key"] == "engine-key"
