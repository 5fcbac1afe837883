"""API keys: bearer, constant-time comparison, and the localhost-only rule without keys."""

from __future__ import annotations

import pytest
from fake_upstream import FakeUpstream
from gateway_harness import running_gateway

from sm121.errors import Sm121Error
from sm121.gateway.app import key_matches
from sm121.gateway.config import GatewayConfig


async def test_keys_required_when_configured() -> None:
    fake = await FakeUpstream().start()
    try:
        async with running_gateway(fake.url, api_keys=("k1", "k2")) as gw:
            missing = await gw.http.get(f"{gw.url}/v1/models")
            wrong = await gw.http.get(f"{gw.url}/v1/models",
                                      headers={"Authorization": "Bearer nope"})
            good = await gw.http.get(f"{gw.url}/v1/models",
                                     headers={"Authorization": "Bearer k2"})
            assert missing.status == 401 and wrong.status == 401
            assert (await missing.json())["error"]["type"] == "invalid_api_key"
            assert good.status == 200
    finally:
        await fake.stop()


async def test_gateway_key_is_not_sent_upstream() -> None:
    fake = await FakeUpstream().start()
    try:
        async with running_gateway(fake.url, api_keys=("secret-key",)) as gw:
            await gw.http.post(f"{gw.url}/v1/completions", json={"prompt": "x"},
                               headers={"Authorization": "Bearer secret-key"})
            assert "Authorization" not in fake.headers[-1]
    finally:
        await fake.stop()


def test_key_matching() -> None:
    assert key_matches("Bearer abc", ("x", "abc"))
    assert key_matches("bearer abc", ("abc",))
    assert not key_matches("Bearer ab", ("abc",))
    assert not key_matches("Basic abc", ("abc",))
    assert not key_matches("", ("abc",))
    assert not key_matches("Bearer ", ("",))


def test_refuses_non_localhost_without_keys() -> None:
    with pytest.raises(Sm121Error, match="without API keys"):
        GatewayConfig(upstream="http://127.0.0.1:1", host="0.0.0.0")
    GatewayConfig(upstream="http://127.0.0.1:1", host="0.0.0.0", api_keys=("k",))
    GatewayConfig(upstream="http://127.0.0.1:1", host="::1")
