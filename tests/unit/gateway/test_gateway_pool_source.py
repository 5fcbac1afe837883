"""Session admission where the engine's /metrics says no KV pool (vLLM 0.21: a block size, no
block count): the pool comes from the boot log of the sm121 run serving the upstream (found by
the URL's port, or named with --runs), or is given (--pool-tokens, which wins over the
engine's own). The upstream is FakeUpstream (a purpose-built fake) serving a vLLM 0.21
/metrics page (tests/fixtures/metrics); the run is a fake run (tests/support/fake_run.py:
tiny-cpu's plan, the H200's real boot log, a stand-in process)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from fake_upstream import FakeUpstream
from gateway_harness import discovered, running_gateway
from support import invoke_cli
from support.fake_run import H200_LOG, fake_run

from sm121.gateway import registry
from sm121.gateway.config import GatewayConfig, UpstreamSpec
from sm121.serving.gateway_process import gateway_config

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
VLLM_021 = (FIXTURES / "metrics" / "vllm-0.21-metrics.txt").read_text()
H200_BLOCKS = 782_032 // 16  # the boot log's pool in vLLM 0.21's blocks of 16


@pytest.fixture
async def vllm_021() -> AsyncIterator[FakeUpstream]:
    fake = await FakeUpstream(metrics_page=VLLM_021).start()
    try:
        yield fake
    finally:
        await fake.stop()


def built_config(monkeypatch: pytest.MonkeyPatch, *args: str) -> GatewayConfig:
    """What `sm121 gateway ARGS` would serve (the command run in this process; serving it is
    left out)."""
    from sm121.cli import gateway as command

    seen: list[GatewayConfig] = []
    monkeypatch.setattr(command, "_run", seen.append)
    invoke_cli("gateway", *args)
    (config,) = seen
    return config


async def sessions(upstreams: tuple[UpstreamSpec, ...]) -> dict[str, Any]:
    """The gateway's session report once its upstream said what it serves, after one turn."""
    async with running_gateway(upstreams=upstreams) as gw:
        await discovered(gw, 1)
        body = {"model": "fake", "messages": [{"role": "user", "content": "x" * 300}]}
        async with gw.http.post(f"{gw.url}/v1/chat/completions", json=body,
                                headers={"X-Session-Id": "a"}) as resp:
            assert resp.status == 200
        async with gw.http.get(f"{gw.url}/sm121/sessions") as resp:
            report: dict[str, Any] = await resp.json()
    return report


async def test_an_upstream_of_an_sm121_run_takes_its_boot_logs_pool(
        vllm_021: FakeUpstream, sm121_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with fake_run("h200-behind-gateway", vllm_021.url, H200_LOG):
        config = await asyncio.to_thread(built_config, monkeypatch, "--upstream",
                                         vllm_021.url.replace("127.0.0.1", "localhost"))
    (spec,) = config.upstreams
    assert (spec.pool_tokens, spec.pool_source, spec.pool_overrides) == (
        782_032, "the boot log of run h200-behind-gateway", False)
    report = await sessions(config.upstreams)
    admission, (replica,) = report["admission"], report["replicas"]
    assert admission["on"] is True
    assert f"{H200_BLOCKS:,} blocks of 16 from the boot log of run h200-behind-gateway" \
        in admission["why"]
    assert replica["pool_blocks"] == H200_BLOCKS
    assert replica["pool_source"] == "the boot log of run h200-behind-gateway"
    assert [a["session"] for a in report["active"]] != []  # admitted against that pool


async def test_without_a_run_or_a_given_pool_admission_stays_off(
        vllm_021: FakeUpstream, sm121_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = await asyncio.to_thread(built_config, monkeypatch, "--upstream", vllm_021.url)
    assert config.upstreams[0].pool_tokens is None
    report = await sessions(config.upstreams)
    assert report["admission"]["on"] is False
    assert "did not report its KV pool" in report["admission"]["why"]


async def test_a_given_pool_wins_over_the_engines_own(sm121_home: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    fake = await FakeUpstream(pool_blocks=64).start()  # its /metrics says 64 blocks of 16
    try:
        config = await asyncio.to_thread(built_config, monkeypatch, "--upstream", fake.url,
                                         "--pool-tokens", "3200")
        (spec,) = config.upstreams
        assert (spec.pool_tokens, spec.pool_overrides) == (3200, True)
        report = await sessions(config.upstreams)
    finally:
        await fake.stop()
    assert report["replicas"][0]["pool_blocks"] == 200
    assert report["replicas"][0]["pool_source"] == "given (--pool-tokens)"


async def test_a_run_named_or_served_in_front_carries_its_pool(
        vllm_021: FakeUpstream, sm121_home: Path, monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> None:
    """`gateway --runs RUN`, `serve --gateway` (its config and its upstreams file) alike."""
    with fake_run("h200-runs", vllm_021.url, H200_LOG) as run:
        named = await asyncio.to_thread(built_config, monkeypatch, "--runs", run.run_id)
        in_front = gateway_config(run, "tiny-cpu", "agent", 8101)
    for spec in (*named.upstreams, *in_front.upstreams):
        assert (spec.pool_tokens, spec.pool_source) == (782_032, "the boot log of run h200-runs")
    path = tmp_path / registry.FILE_NAME
    registry.create(path, "http://127.0.0.1:8101", list(named.upstreams))
    assert registry.load(path) == named.upstreams  # the upstreams file keeps it
    assert json.loads(path.read_text())["upstreams"][0]["pool_tokens"] == 782_032
