"""The stall watch over real HTTP, against the purpose-built fake (fake_upstream.py): the
point is timing control, a replica that hangs at a chosen chunk the way a killed engine does
while the kernel tears it down (sockets open, nothing streams, /health never answers). The
same failover against real vLLM engines is measured by benchmarks/routing_chat.py failover."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator

import aiohttp
import pytest
from fake_upstream import FakeUpstream
from gateway_harness import Running, discovered, fake_specs, header_session, running_gateway

from sm121.gateway.config import RoutingSettings
from sm121.gateway.routing import rendezvous

# Health rounds as slow as the defaults' verdict (a 2 s timeout, twice): what ends the hung
# streams here within the test's bound is the stall watch alone. Its probe allows 1 s, so a
# loaded host does not fail the fakes' in-process /health.
WATCHED = RoutingSettings(health_interval_s=1.0, readmit_after_s=60, stall_s=0.2,
                          stall_probe_timeout_s=1.0)
SESSION = {"X-Session-Id": "agent-1"}
BODY = {"model": "fake", "stream": True, "messages": [{"role": "user", "content": "x"}]}


@pytest.fixture
async def two_fakes() -> AsyncIterator[tuple[FakeUpstream, FakeUpstream]]:
    fakes = [await FakeUpstream(chunks=40, interval_s=0.02).start() for _ in range(2)]
    yield fakes[0], fakes[1]
    for fake in fakes:
        fake.mode = "normal"  # hung handlers would hold the fake's shutdown
        await fake.stop()


async def _owner(gw: Running, fakes: tuple[FakeUpstream, ...]) -> FakeUpstream:
    await discovered(gw, len(fakes))
    replicas = list(gw.gateway.replicas.values())
    return fakes[replicas.index(rendezvous(header_session("agent-1"), replicas)[0])]


async def _events(response: aiohttp.ClientResponse, hang_after: int, fake: FakeUpstream
                  ) -> list[str]:
    """The stream's data lines; the fake hangs once `hang_after` of them have arrived."""
    events: list[str] = []
    async for line in response.content:
        if line.startswith(b"data: "):
            events.append(line[6:].decode().strip())
            if len(events) == hang_after:
                fake.mode = "hang"
    return events


async def test_a_hung_replica_is_given_up_on_and_its_session_moves(
        two_fakes: tuple[FakeUpstream, FakeUpstream]) -> None:
    async with running_gateway(upstreams=fake_specs(*two_fakes), routing=WATCHED) as gw:
        owner = await _owner(gw, two_fakes)
        response = await gw.http.post(f"{gw.url}/v1/chat/completions", json=BODY,
                                      headers=SESSION)
        hung_at = time.monotonic()
        events = await asyncio.wait_for(_events(response, 3, owner), timeout=20)
        ended_after = time.monotonic() - hung_at
        assert json.loads(events[-2])["error"]["type"] == "upstream_disconnected"
        assert events[-1] == "[DONE]" and len(events) < 40
        name = next(r.name for r in gw.gateway.replicas.values() if r.url == owner.url)
        assert await gw.metric("sm121_gateway_replica_ejections_total", upstream=name,
                               reason="stalled") == 1
        # Its next turn goes to the survivor, which answers in full.
        again = await gw.http.post(f"{gw.url}/v1/chat/completions", json=BODY, headers=SESSION)
        assert again.headers["X-Sm121-Upstream"] != name
        assert again.status == 200 and (await again.text()).endswith("data: [DONE]\n\n")
        assert ended_after < 15, ended_after  # bounded: without the watch it never ends


async def test_streams_on_a_replica_the_health_rounds_ejected_are_ended_too(
        two_fakes: tuple[FakeUpstream, FakeUpstream]) -> None:
    """The rounds take it out of the rotation first; its hung requests still end."""
    rounds_first = RoutingSettings(health_interval_s=0.1, health_timeout_s=0.2,
                                   readmit_after_s=60, stall_s=1.0, stall_probe_timeout_s=0.3)
    async with running_gateway(upstreams=fake_specs(*two_fakes), routing=rounds_first) as gw:
        owner = await _owner(gw, two_fakes)
        response = await gw.http.post(f"{gw.url}/v1/chat/completions", json=BODY,
                                      headers=SESSION)
        events = await asyncio.wait_for(_events(response, 3, owner), timeout=20)
        assert json.loads(events[-2])["error"]["type"] == "upstream_disconnected"
        name = next(r.name for r in gw.gateway.replicas.values() if r.url == owner.url)
        assert await gw.metric("sm121_gateway_replica_ejections_total", upstream=name,
                               reason="health") == 1


async def test_a_new_request_to_a_hung_replica_goes_to_the_survivor(
        two_fakes: tuple[FakeUpstream, FakeUpstream]) -> None:
    """Sent after the hang, before anything noticed it: abandoned before its head, it is
    retried on the other replica, and the client sees only the answer."""
    async with running_gateway(upstreams=fake_specs(*two_fakes), routing=WATCHED) as gw:
        owner = await _owner(gw, two_fakes)
        owner.mode = "hang"
        response = await asyncio.wait_for(gw.http.post(
            f"{gw.url}/v1/chat/completions", json=BODY, headers=SESSION), timeout=20)
        assert response.status == 200 and (await response.text()).endswith("data: [DONE]\n\n")
        assert owner.requests == 1 and sum(f.requests for f in two_fakes) == 2


async def test_a_silent_replica_that_answers_health_is_kept(
        two_fakes: tuple[FakeUpstream, FakeUpstream]) -> None:
    """A long prefill sends nothing for seconds; its engine still answers /health."""
    async with running_gateway(upstreams=fake_specs(*two_fakes), routing=WATCHED) as gw:
        owner = await _owner(gw, two_fakes)
        owner.mode = "stall"
        request = asyncio.ensure_future(gw.http.post(
            f"{gw.url}/v1/chat/completions", json=BODY, headers=SESSION))
        await asyncio.sleep(10 * WATCHED.stall_s)  # several probes' worth of silence
        assert not request.done()
        assert all(r.healthy for r in gw.gateway.replicas.values())
        request.cancel()


async def test_a_lone_replica_is_not_given_up_on() -> None:
    """Nowhere to retry: its streams are left to the engine and the health rounds."""
    fake = await FakeUpstream(chunks=40, interval_s=0.02).start()
    try:
        async with running_gateway(upstreams=fake_specs(fake), routing=WATCHED) as gw:
            response = await gw.http.post(f"{gw.url}/v1/chat/completions", json=BODY)
            read = asyncio.ensure_future(_events(response, 3, fake))
            await asyncio.sleep(10 * WATCHED.stall_s)
            assert not read.done()
            read.cancel()
    finally:
        fake.mode = "normal"
        await fake.stop()
