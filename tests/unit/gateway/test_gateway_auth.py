"""API keys: bearer, constant-time comparison, and the localhost-only rule without keys."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest
from fake_upstream import FakeUpstream
from gateway_harness import running_gateway

from sm121.errors import Sm121Error
from sm121.gateway.api_keys import load_api_keys
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


def _gateway_cli(*argv: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    from typer.testing import CliRunner

    from sm121.cli.main import app

    result = CliRunner().invoke(app, ["gateway", *argv], env=env)
    return result.exit_code, f"{result.output}{result.exception or ''}"


def test_a_key_file_others_can_read_is_refused_with_the_fix(tmp_path: Path) -> None:
    keys = tmp_path / "keys"
    keys.write_text("# the team's keys\nk1\n\nk2\n")
    os.chmod(keys, 0o644)
    with socket.socket() as taken:  # a gateway that got past its keys fails here instead
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        for mode in (0o644, 0o640, 0o604):
            os.chmod(keys, mode)
            code, said = _gateway_cli("--upstream", "http://127.0.0.1:9", "--listen",
                                      f"127.0.0.1:{port}", "--api-key-file", str(keys),
                                      env={"SM121_GATEWAY_API_KEYS": ""})
            assert code != 0 and f"has mode {mode:04o}" in said and "chmod 600" in said, said
    os.chmod(keys, 0o600)
    assert load_api_keys(keys, "k0, ") == ("k0", "k1", "k2")
    os.chmod(keys, 0o400)
    assert load_api_keys(keys) == ("k1", "k2")
