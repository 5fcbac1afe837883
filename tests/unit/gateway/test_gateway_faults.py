"""Faults, each its own test: upstream down, upstream dying mid-stream, a slow client, a client
that goes away. The upstream is the purpose-built fake (fake_upstream.py)."""

from __future__ import annotations

import asyncio
import json

import pytest
from fake_upstream import FakeUpstream
from gateway_harness import running_gateway
from support import free_port


async def test_upstream_down_gets_503_with_a_clear_body() -> None:
    async with running_gateway(f"http://127.0.0.1:{free_port()}") as gw:
        response = await gw.chat(stream=True)
        error = (await response.json())["error"]
        assert response.status == 503
        assert response.headers["Retry-After"] == "5"  # a supervised restart is under way
        assert error["type"] == "upstream_unavailable"
        assert "not reachable" in error["message"] and "sm121 status" in error["message"]
        assert await gw.metric("sm121_gateway_upstream_errors_total", kind="unreachable") == 1


async def test_upstream_dies_mid_stream_then_gateway_keeps_serving() -> None:
    fake = await FakeUpstream(mode="die").start()
    try:
        async with running_gateway(fake.url) as gw:
            response = await gw.chat(stream=True)
            text = await response.text()  # a clean end: no exception while reading
            events = [line[6:] for line in text.splitlines() if line.startswith("data: ")]
            assert json.loads(events[0])["choices"][0]["delta"]["content"] == "tok0 "
            assert json.loads(events[-2])["error"]["type"] == "upstream_disconnected"
            assert events[-1] == "[DONE]"
            fake.mode = "normal"
            again = await gw.chat(stream=True)
            assert again.status == 200 and (await again.text()).endswith("data: [DONE]\n\n")
            assert await gw.metric("sm121_gateway_upstream_errors_total",
                                   kind="mid_stream") == 1
    finally:
        await fake.stop()


async def test_slow_client_keeps_gateway_memory_bounded() -> None:
    """A client that stops reading must stall the upstream, not fill the gateway: what the
    upstream managed to send stays within socket buffers of what the client read."""
    fake = await FakeUpstream(mode="flood", flood_bytes=400 * 1024 * 1024).start()
    try:
        async with running_gateway(fake.url) as gw:
            response = await gw.chat(stream=True)
            read = len(await response.content.read(1024 * 1024))
            await asyncio.sleep(1.5)  # an unbounded proxy would take in everything meanwhile
            assert fake.bytes_sent - read < 48 * 1024 * 1024, fake.bytes_sent
            response.close()
    finally:
        await fake.stop()


async def test_client_disconnect_aborts_the_upstream_request_during_prefill() -> None:
    fake = await FakeUpstream(mode="stall").start()
    try:
        async with running_gateway(fake.url) as gw:
            request = asyncio.ensure_future(gw.chat(stream=True))
            while not fake.bodies:  # the upstream has it and is "in prefill": nothing sent yet
                await asyncio.sleep(0.05)
            request.cancel()  # the client goes away
            await asyncio.wait_for(fake.cancelled.wait(), timeout=10)
            assert gw.replica.admission.general.held == 0
    finally:
        await fake.stop()


async def test_client_disconnect_mid_stream_aborts_the_upstream() -> None:
    fake = await FakeUpstream(chunks=10_000, interval_s=0.01).start()
    try:
        async with running_gateway(fake.url) as gw:
            response = await gw.chat(stream=True)
            await response.content.readany()
            response.close()
            await asyncio.wait_for(fake.finished.wait(), timeout=10)
            assert len(fake.bodies) == 1
            await asyncio.sleep(0.2)
            assert await gw.metric("sm121_gateway_client_disconnects_total") == 1
    finally:
        await fake.stop()


async def test_gateway_recovers_when_the_upstream_comes_back() -> None:
    fake = await FakeUpstream().start()
    async with running_gateway(fake.url) as gw:
        await fake.stop()
        assert (await gw.chat()).status == 503
        back = await FakeUpstream().start(port=fake.port)
        try:
            assert (await gw.chat()).status == 200
        finally:
            await back.stop()


async def test_a_dead_upstream_reaches_each_sdk_as_its_protocols_error_event() -> None:
    """Mid-stream death on Messages and Responses: the gateway ends the stream with that
    protocol's `event: error`, which the anthropic and openai SDKs raise with its message."""
    import anthropic
    import openai

    fake = await FakeUpstream(mode="die").start()
    try:
        async with running_gateway(fake.url) as gw:
            claude = anthropic.AsyncAnthropic(base_url=gw.url, auth_token="x", api_key=None,
                                              max_retries=0)
            with pytest.raises(anthropic.APIStatusError, match="stopped mid-stream"):
                async for _ in await claude.messages.create(
                        model="fake", max_tokens=8, stream=True,
                        messages=[{"role": "user", "content": "hi"}]):
                    pass
            await claude.close()
            codex = openai.AsyncOpenAI(base_url=f"{gw.url}/v1", api_key="x", max_retries=0)
            with pytest.raises(openai.APIError, match="stopped mid-stream"):
                async for _ in await codex.responses.create(model="fake", input="hi",
                                                            stream=True):
                    pass
            await codex.close()
    finally:
        await fake.stop()
