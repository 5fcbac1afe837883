"""Admission through the running gateway: the long-prompt lane and the fair cap."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from fake_upstream import FakeUpstream
from gateway_harness import Running, running_gateway

LONG_PROMPT = "p" * 3000  # over the 1,000-token threshold set below


@pytest.fixture
async def upstream() -> AsyncIterator[FakeUpstream]:
    # A long prompt's "prefill" takes about 1 s, each stream 0.8 s more, so requests overlap.
    fake = await FakeUpstream(chunks=8, interval_s=0.1, prefill_s_per_1k=0.3).start()
    yield fake
    await fake.stop()


def _completion(gw: Running, prompt: str, session: str) -> asyncio.Task[str]:
    async def run() -> str:
        response = await gw.http.post(f"{gw.url}/v1/completions", headers={
            "x-session-id": session}, json={"model": "fake", "prompt": prompt, "stream": True})
        return await response.text()
    return asyncio.ensure_future(run())


async def test_long_lane_admits_one_long_prefill_and_lets_short_ones_pass(
        upstream: FakeUpstream) -> None:
    async with running_gateway(upstream.url, long_prompt_tokens=1000, long_lane=1,
                               max_model_len=100_000) as gw:
        longs = [_completion(gw, LONG_PROMPT + str(i), f"long{i}") for i in range(2)]
        while not upstream.bodies:
            await asyncio.sleep(0.01)
        assert gw.replica.admission.long.waiting == 1  # the second long one waits for the lane
        short = _completion(gw, "hi", "short")
        await asyncio.gather(short, *longs)
        # The short turn reached the engine during the first long prefill, not after both.
        assert [b["prompt"][:2] for b in upstream.bodies] == ["pp", "hi", "pp"]
        waited = await gw.metric("sm121_gateway_queue_wait_seconds_count", lane="long")
        assert waited == 2


async def test_long_lane_is_released_at_the_first_byte(upstream: FakeUpstream) -> None:
    """Prefill ends at the first token: the next long prompt may start while the first one is
    still decoding."""
    async with running_gateway(upstream.url, long_prompt_tokens=1000, long_lane=1,
                               max_model_len=100_000) as gw:
        first = _completion(gw, LONG_PROMPT + "a", "a")
        while not upstream.bodies:
            await asyncio.sleep(0.01)
        second = _completion(gw, LONG_PROMPT + "b", "b")
        while len(upstream.bodies) < 2:
            await asyncio.sleep(0.01)
        assert not first.done()  # both in flight: the lane only serialised the prefills
        await asyncio.gather(first, second)


async def test_concurrency_cap_queues_and_reports_depth(upstream: FakeUpstream) -> None:
    async with running_gateway(upstream.url, max_inflight=2) as gw:
        tasks = [_completion(gw, "hi", f"s{i}") for i in range(5)]
        await asyncio.sleep(0.2)
        assert await gw.metric("sm121_gateway_queue_depth", lane="general") == 3
        assert len(upstream.bodies) == 2
        await asyncio.gather(*tasks)
        assert await gw.metric("sm121_gateway_queue_depth", lane="general") == 0
        assert await gw.metric("sm121_gateway_queue_wait_seconds_count", lane="general") == 5
