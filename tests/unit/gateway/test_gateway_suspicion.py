"""Proof and suspicion (replicas.py): a refused connect is proof that an engine is gone; no
answer in time is only suspicion, and never ejects the last healthy replica of a model. A
connect that fails without proof is tried once more before the client gets an answer.

The real gateway in this process, the purpose-built fake (fake_upstream.py) behind it; the
same through `sm121 gateway` in its own process is test_gateway_live_engine.py."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest
from fake_upstream import FakeUpstream
from gateway_harness import discovered, fake_specs, running_gateway
from support import free_port

from sm121.gateway.config import RoutingSettings, UpstreamSpec
from sm121.gateway.metrics import GatewayMetrics
from sm121.gateway.relay import RelayProtocol
from sm121.gateway.replicas import Replica, alone

# /health times out after 0.2 s, a round every 0.1 s: two failed rounds take about 0.6 s.
QUICK = RoutingSettings(health_interval_s=0.1, health_timeout_s=0.2, readmit_after_s=0.3)
SLOW_HEALTH_S = 1.0  # well past QUICK's timeout
ROUNDS_S = 2.0  # enough rounds for an ejection several times over


@pytest.fixture
async def slow_health_fakes() -> AsyncIterator[tuple[FakeUpstream, FakeUpstream]]:
    """Two fakes whose /health answers after SLOW_HEALTH_S; every other route at once."""
    first = await FakeUpstream(health_delay_s=SLOW_HEALTH_S).start()
    second = await FakeUpstream(health_delay_s=SLOW_HEALTH_S).start()
    yield first, second
    await first.stop()
    await second.stop()


async def test_a_connect_timed_out_by_the_gateways_own_stall_is_retried() -> None:
    """The mechanism behind the fuzz run's 503s: the process stalls past the connect timeout
    while its connect to a live upstream is under way; the loop wakes and runs the timeout
    before it reads the finished connect. Once retried, the client gets its 200."""
    fake = await FakeUpstream().start()
    try:
        async with running_gateway(fake.url, upstream_connect_timeout_s=0.3) as gw:
            pool = gw.replica.pool
            real_acquire, stalls = pool.acquire, []

            async def acquire_with_a_stall() -> tuple[RelayProtocol, bool]:
                if stalls:
                    return await real_acquire()
                stalls.append(time.monotonic())
                connecting = asyncio.ensure_future(real_acquire())
                await asyncio.sleep(0)  # the connect is under way
                time.sleep(0.5)  # the whole process stalls past the 0.3 s connect timeout
                return await connecting

            pool.acquire = acquire_with_a_stall  # type: ignore[method-assign]
            response = await gw.chat()
            assert response.status == 200, await response.text()
            assert stalls and fake.requests == 1
            assert await gw.metric("sm121_gateway_upstream_errors_total",
                                   kind="connect_retried") == 1
            assert await gw.metric("sm121_gateway_upstream_errors_total",
                                   kind="unreachable") == 0
            assert gw.replica.healthy
    finally:
        await fake.stop()


async def test_the_only_replica_stays_in_while_its_health_is_only_slow(
        slow_health_fakes: tuple[FakeUpstream, FakeUpstream]) -> None:
    fake = slow_health_fakes[0]
    async with running_gateway(fake.url, routing=QUICK) as gw:
        await discovered(gw, 1)
        await asyncio.sleep(ROUNDS_S)
        assert gw.replica.healthy
        assert gw.replica.counts["ejections"] == 0
        assert gw.replica.counts["spared"] == 1  # once per streak, not once per round
        for path in ("/v1/models", "/health"):
            async with gw.http.get(f"{gw.url}{path}") as answer:
                assert answer.status == 200, (path, await answer.text())
        response = await gw.chat(stream=True)
        assert response.status == 200
        assert (await response.text()).endswith("data: [DONE]\n\n")


async def test_of_two_replicas_with_slow_health_one_stays_in(
        slow_health_fakes: tuple[FakeUpstream, FakeUpstream]) -> None:
    async with running_gateway(upstreams=fake_specs(*slow_health_fakes), routing=QUICK) as gw:
        await discovered(gw, 2)
        await asyncio.sleep(ROUNDS_S)
        replicas = list(gw.gateway.replicas.values())
        assert sorted(r.healthy for r in replicas) == [False, True]
        assert sorted(r.counts["spared"] for r in replicas) == [0, 1]
        async with gw.http.get(f"{gw.url}/v1/models") as answer:
            assert answer.status == 200


async def test_a_refused_health_round_ejects_even_the_only_replica() -> None:
    """Proof needs no second round and spares no one: nothing listens on the port."""
    async with running_gateway(f"http://127.0.0.1:{free_port()}", routing=QUICK) as gw:
        for _ in range(50):
            if not gw.replica.healthy:
                break
            await asyncio.sleep(0.05)
        assert not gw.replica.healthy
        assert await gw.metric("sm121_gateway_replica_ejections_total",
                               upstream=gw.replica.name, reason="refused") == 1
        assert gw.replica.counts["spared"] == 0


def _replica(name: str, *models: str) -> Replica:
    replica = Replica(UpstreamSpec(url=f"http://127.0.0.1:1/{name}", name=name),
                      GatewayMetrics(), RoutingSettings())
    replica.learned([{"id": m} for m in models], None, None)
    return replica


def test_alone_means_the_last_healthy_replica_of_any_of_its_models() -> None:
    a, b, c = _replica("a", "m1", "m2"), _replica("b", "m1"), _replica("c", "m2")
    assert not alone(a, [a, b, c])  # m1 has b, m2 has c
    c.eject("test")
    assert alone(a, [a, b, c])  # m2 would have none
    assert alone(b, [b])
    lone = _replica("lone")  # has not said what it serves: any healthy other will do
    assert not alone(lone, [lone, b]) and alone(lone, [lone])
