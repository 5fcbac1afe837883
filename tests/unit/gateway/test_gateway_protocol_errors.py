"""The gateway's own refusals on /v1/messages come in Anthropic's error shape (what Claude
Code and the anthropic SDK expect): a wrong or missing key, an unknown model, a body too
large; chat keeps OpenAI's."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anthropic
import pytest
from fake_protocol_engine import FakeProtocolEngine
from gateway_harness import running_gateway


@pytest.fixture
async def engine() -> AsyncIterator[FakeProtocolEngine]:
    fake = await FakeProtocolEngine(model="coder").start()
    yield fake
    await fake.stop()


async def test_refusals_on_messages_are_anthropic_errors(engine: FakeProtocolEngine) -> None:
    async with running_gateway(engine.url, api_keys=("k",), max_body_bytes=4096) as gw:
        claude = anthropic.AsyncAnthropic(base_url=gw.url, auth_token="wrong", api_key=None,
                                          max_retries=0)
        with pytest.raises(anthropic.AuthenticationError) as refused:
            await claude.messages.create(model="coder", max_tokens=4,
                                         messages=[{"role": "user", "content": "hi"}])
        assert refused.value.body["type"] == "error"  # type: ignore[index]
        assert "API key" in refused.value.body["error"]["message"]  # type: ignore[index]
        await claude.close()
        keyed = anthropic.AsyncAnthropic(base_url=gw.url, auth_token="k", api_key=None,
                                         max_retries=0)
        with pytest.raises(anthropic.NotFoundError) as unknown:  # the router's refusal
            await keyed.messages.create(model="nope", max_tokens=4,
                                        messages=[{"role": "user", "content": "hi"}])
        assert unknown.value.body["type"] == "error"  # type: ignore[index]
        assert "'coder'" in unknown.value.body["error"]["message"]  # type: ignore[index]
        await keyed.close()
        for headers, body, status in (({}, b'{"model": "coder"}', 401),
                                      ({"Authorization": "Bearer k"}, b" " * 5000, 413)):
            response = await gw.http.post(f"{gw.url}/v1/messages", data=body, headers=headers)
            data = await response.json()
            assert response.status == status and data["type"] == "error", data
            assert set(data["error"]) == {"type", "message"}
        chat = await gw.http.post(f"{gw.url}/v1/chat/completions", data=b"{}")
        assert chat.status == 401 and "type" not in await chat.json()  # OpenAI's shape
    assert not engine.seen
