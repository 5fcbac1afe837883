"""Start a real gateway (the same runner `sm121 gateway` uses) on a free port in this process."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
from aiohttp import web
from fake_upstream import FakeUpstream
from support import free_port

from sm121.gateway.app import start_site
from sm121.gateway.config import GatewayConfig, UpstreamSpec
from sm121.gateway.handlers import GATEWAY
from sm121.gateway.replicas import Replica
from sm121.gateway.sessions import DEFAULT_SESSION_HEADER, session_id
from sm121.gateway.state import Gateway
from sm121.recipes.schema import ParamPolicy, PolicyAction, RequestPolicy

POLICY = RequestPolicy(params={
    "repetition_penalty": ParamPolicy(action=PolicyAction.STRIP, neutral=1.0,
                                      reason="crashes the DSpark path"),
    "guided_grammar": ParamPolicy(action=PolicyAction.REJECT, reason="not supported here"),
})


@dataclasses.dataclass
class Running:
    url: str
    runner: web.AppRunner
    http: aiohttp.ClientSession

    @property
    def gateway(self) -> Gateway:
        return self.runner.app[GATEWAY]

    @property
    def replica(self) -> Replica:
        """The first upstream's replica (the only one, in single-upstream tests)."""
        return next(iter(self.gateway.replicas.values()))

    async def chat(self, stream: bool = False, **extra: Any) -> aiohttp.ClientResponse:
        body = {"model": "fake", "messages": [{"role": "user", "content": "hi"}],
                "stream": stream, **extra}
        return await self.http.post(f"{self.url}/v1/chat/completions", json=body)

    async def metric(self, name: str, **labels: str) -> float:
        value = self.gateway.metrics.registry.get_sample_value(name, labels or None)
        return value or 0.0


def header_session(value: str) -> str:
    """The session id the gateway makes of `X-Session-Id: value` (a digest of it)."""
    return session_id({DEFAULT_SESSION_HEADER: value}, {})


def fake_specs(*fakes: FakeUpstream) -> tuple[UpstreamSpec, ...]:
    """One upstream per fake, named fake-0, fake-1, ..."""
    return tuple(UpstreamSpec(url=f.url, name=f"fake-{i}") for i, f in enumerate(fakes))


async def discovered(gw: Running, count: int) -> None:
    """Wait (up to 5 s) until `count` replicas have said what they serve."""
    for _ in range(100):
        if sum(r.discovered for r in gw.gateway.replicas.values()) >= count:
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the gateway did not discover its upstreams")


@asynccontextmanager
async def running_gateway(upstream: str = "", **settings: Any) -> AsyncIterator[Running]:
    config = GatewayConfig(upstream=upstream, port=free_port(),
                           policy=settings.pop("policy", POLICY), **settings)
    runner = await start_site(config)
    http = aiohttp.ClientSession()
    try:
        yield Running(config.base_url, runner, http)
    finally:
        await http.close()
        await runner.cleanup()
