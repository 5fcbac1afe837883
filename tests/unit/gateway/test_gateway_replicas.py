"""Several upstreams behind one gateway, over real HTTP. The upstreams are the purpose-built
fake (fake_upstream.py), because the point is timing control: dying at the second chunk,
coming back at a chosen moment. The same behaviour against real vLLM engines is tested in
tests/integration/test_gateway_routing.py."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from fake_upstream import FakeUpstream
from gateway_harness import discovered, fake_specs, header_session, running_gateway

from sm121.gateway import registry
from sm121.gateway.config import RoutingSettings
from sm121.gateway.routing import rendezvous

FAST = RoutingSettings(health_interval_s=0.1, readmit_after_s=0.3)


@pytest.fixture
async def two_fakes() -> AsyncIterator[tuple[FakeUpstream, FakeUpstream]]:
    first, second = await FakeUpstream().start(), await FakeUpstream().start()
    yield first, second
    await first.stop()
    await second.stop()


async def test_two_models_through_one_url(two_fakes: tuple[FakeUpstream, FakeUpstream]
                                          ) -> None:
    first, second = two_fakes
    second.model = "other"
    async with running_gateway(upstreams=fake_specs(first, second), routing=FAST) as gw:
        await discovered(gw, 2)
        models = await (await gw.http.get(f"{gw.url}/v1/models")).json()
        assert sorted(m["id"] for m in models["data"]) == ["fake", "other"]
        assert (await gw.chat(model="other")).status == 200
        assert (await gw.chat(model="fake")).status == 200
        assert (first.requests, second.requests) == (1, 1)
        unknown = await gw.chat(model="gpt-5")
        error = (await unknown.json())["error"]
        assert unknown.status == 404 and error["code"] == "model_not_found"
        assert "'fake', 'other'" in error["message"] and error["param"] == "model"


async def test_a_session_stays_on_its_replica(two_fakes: tuple[FakeUpstream, FakeUpstream]
                                              ) -> None:
    async with running_gateway(upstreams=fake_specs(*two_fakes), routing=FAST) as gw:
        await discovered(gw, 2)
        for turn in range(6):
            response = await gw.http.post(f"{gw.url}/v1/chat/completions", headers={
                "X-Session-Id": "agent-1"}, json={"model": "fake", "messages": [
                    {"role": "user", "content": f"turn {turn}"}]})
            assert response.status == 200
        assert sorted(f.requests for f in two_fakes) == [0, 6]
        owner = rendezvous(header_session("agent-1"), list(gw.gateway.replicas.values()))[0]
        assert await gw.metric("sm121_gateway_routed_total", upstream=owner.name,
                               how="affinity") == 6


async def test_a_replica_that_dies_mid_stream_is_ejected_and_readmitted(
        two_fakes: tuple[FakeUpstream, FakeUpstream]) -> None:
    async with running_gateway(upstreams=fake_specs(*two_fakes), routing=FAST) as gw:
        await discovered(gw, 2)
        replicas = list(gw.gateway.replicas.values())
        owner = rendezvous(header_session("agent-1"), replicas)[0]
        dying = two_fakes[replicas.index(owner)]
        dying.mode = "die"
        headers = {"X-Session-Id": "agent-1"}
        body = {"model": "fake", "stream": True, "messages": [{"role": "user", "content": "x"}]}
        response = await gw.http.post(f"{gw.url}/v1/chat/completions", json=body,
                                      headers=headers)
        events = [line[6:] for line in (await response.text()).splitlines()
                  if line.startswith("data: ")]
        assert json.loads(events[-2])["error"]["type"] == "upstream_disconnected"
        assert events[-1] == "[DONE]"
        assert not owner.healthy
        assert await gw.metric("sm121_gateway_replica_ejections_total", upstream=owner.name,
                               reason="died") == 1
        again = await gw.http.post(f"{gw.url}/v1/chat/completions", json=body, headers=headers)
        assert again.status == 200 and (await again.text()).endswith("data: [DONE]\n\n")
        assert await gw.metric("sm121_gateway_spills_total", upstream=owner.name,
                               reason="unhealthy") == 1
        dying.mode = "normal"  # it answers /health all along: back after readmit_after_s
        for _ in range(50):
            if owner.healthy:
                break
            await asyncio.sleep(0.05)
        assert owner.healthy
        assert await gw.metric("sm121_gateway_replica_readmissions_total",
                               upstream=owner.name) == 1


async def test_a_stopped_replica_is_skipped_without_an_error(
        two_fakes: tuple[FakeUpstream, FakeUpstream]) -> None:
    """Its connection is refused: nothing reached it, so the request goes to the survivor."""
    async with running_gateway(upstreams=fake_specs(*two_fakes), routing=FAST) as gw:
        await discovered(gw, 2)
        replicas = list(gw.gateway.replicas.values())
        owner = rendezvous(header_session("agent-2"), replicas)[0]
        await two_fakes[replicas.index(owner)].stop()
        response = await gw.http.post(f"{gw.url}/v1/chat/completions", headers={
            "X-Session-Id": "agent-2"}, json={"model": "fake", "messages": [
                {"role": "user", "content": "x"}]})
        assert response.status == 200
        assert not owner.healthy
        health = await (await gw.http.get(f"{gw.url}/health")).json()
        assert sorted(u["healthy"] for u in health["upstreams"]) == [False, True]


async def test_the_gateway_follows_its_upstreams_file(
        two_fakes: tuple[FakeUpstream, FakeUpstream], tmp_path: Path) -> None:
    """What `serve --gateway-join` does: add an upstream to the file a running gateway watches."""
    first, second = two_fakes
    second.model = "other"
    path = tmp_path / registry.FILE_NAME
    first_spec, second_spec = fake_specs(first, second)
    registry.create(path, "http://gateway", [first_spec])
    async with running_gateway(registry=path, routing=FAST) as gw:
        await discovered(gw, 1)
        assert (await gw.chat(model="other")).status == 404
        registry.add(path, second_spec)
        await discovered(gw, 2)
        assert (await gw.chat(model="other")).status == 200
        upstreams = await (await gw.http.get(f"{gw.url}/sm121/upstreams")).json()
        assert upstreams["models"] == ["fake", "other"]
        registry.remove(path, first_spec.name)
        for _ in range(60):
            if len(gw.gateway.replicas) == 1:
                break
            await asyncio.sleep(0.05)
        assert list(gw.gateway.replicas) == [second_spec.name]
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    assert registry.load(path) == (second_spec,)
