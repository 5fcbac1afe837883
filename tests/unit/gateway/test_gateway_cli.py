"""The gateway's command line: refusals with hints, and `serve --gateway`'s launch and stop."""

from __future__ import annotations

import asyncio
import json
import urllib.request
from pathlib import Path
from typing import Any

from fake_upstream import FakeUpstream
from support import free_port, invoke_cli

from sm121.gateway import registry
from sm121.gateway.config import UpstreamSpec
from sm121.hosts.processes import group_alive
from sm121.runs.state import RunInfo, create_run_dir, now_iso
from sm121.serving.gateway_process import start_gateway


def test_gateway_needs_an_upstream() -> None:
    result = invoke_cli("gateway", check=False)
    assert result.returncode == 2 and "--upstream" in result.stderr


def test_gateway_refuses_a_public_address_without_keys() -> None:
    result = invoke_cli("gateway", "--upstream", "http://127.0.0.1:9", "--listen", "0.0.0.0:8199",
                     check=False, env={"SM121_GATEWAY_API_KEYS": ""})
    assert result.returncode == 2 and "without API keys" in result.stderr


def test_locality_without_a_gateway_says_so() -> None:
    result = invoke_cli("gateway", "locality", "--url", f"http://127.0.0.1:{free_port()}",
                     check=False)
    assert result.returncode == 2 and "no gateway answering" in result.stderr


def test_serve_offers_the_gateway() -> None:
    assert "--gateway" in invoke_cli("serve", "--help").stdout


async def test_gateway_started_for_a_run_is_stopped_with_it(sm121_home: Path) -> None:
    """What `sm121 serve --gateway` does after the engine is ready, against a fake engine."""
    fake = await FakeUpstream().start()
    run = RunInfo(run_id="fake-gateway-run", recipe="tiny-cpu", profile="agent",
                  created=now_iso(), base_url=fake.url, model="fake", status="ready")
    create_run_dir(run.run_id)
    run.save()
    try:
        url = await asyncio.to_thread(start_gateway, run, "tiny-cpu", "agent", free_port())
        body = json.dumps({"model": "fake", "prompt": "x", "repetition_penalty": 2.0}).encode()
        request = urllib.request.Request(f"{url}/v1/completions", data=body,
                                         headers={"Content-Type": "application/json"})
        response = await asyncio.to_thread(urllib.request.urlopen, request, timeout=30)
        assert response.headers["X-Sm121-Stripped-Params"] == "repetition_penalty"
        pid = run.nodes[-1].pgid
        assert run.nodes[-1].name == "gateway" and pid is not None and group_alive(pid)
        out = await asyncio.to_thread(invoke_cli, "stop", run.run_id)
        assert "stopped" in out.stdout and not group_alive(pid)
    finally:
        await fake.stop()


def test_gateway_join_needs_a_run_with_a_gateway(sm121_home: Path) -> None:
    result = invoke_cli("serve", "tiny-cpu", "--gateway-join", "no-such-run", check=False)
    assert result.returncode == 2 and "no run 'no-such-run'" in result.stderr
    run = RunInfo(run_id="fake-no-gateway", recipe="tiny-cpu", profile="agent",
                  created=now_iso(), base_url="http://127.0.0.1:9", model="fake", status="ready")
    create_run_dir(run.run_id)
    run.save()
    result = invoke_cli("serve", "tiny-cpu", "--gateway-join", run.run_id, check=False)
    assert result.returncode == 2 and "no running gateway to join" in result.stderr
    both = invoke_cli("serve", "tiny-cpu", "--gateway", "--gateway-join", run.run_id, check=False)
    assert both.returncode == 2 and "not both" in both.stderr


async def test_a_joined_engine_is_routed_by_the_running_gateway(sm121_home: Path) -> None:
    """What `serve --gateway` and then `serve OTHER --gateway-join RUN` do once their engines
    are ready, with fake engines: the second one's model becomes reachable at the same URL."""
    first, second = await FakeUpstream().start(), await FakeUpstream(model="other").start()
    run = RunInfo(run_id="fake-gateway-join", recipe="tiny-cpu", profile="agent",
                  created=now_iso(), base_url=first.url, model="fake", status="ready")
    create_run_dir(run.run_id)
    run.save()
    upstreams = run.directory / registry.FILE_NAME
    port = free_port()
    registry.create(upstreams, f"http://127.0.0.1:{port}",
                    [UpstreamSpec(url=first.url, name=run.run_id)])
    try:
        url = await asyncio.to_thread(start_gateway, run, "tiny-cpu", "agent", port,
                                      registry=upstreams)
        registry.add(upstreams, UpstreamSpec(url=second.url, name="fake-second"))
        for _ in range(100):  # the file is read every second, the new engine asked at once
            state = await asyncio.to_thread(_get_json, f"{url}/sm121/upstreams")
            if state["models"] == ["fake", "other"]:
                break
            await asyncio.sleep(0.1)
        body = json.dumps({"model": "other", "prompt": "x"}).encode()
        request = urllib.request.Request(f"{url}/v1/completions", data=body,
                                         headers={"Content-Type": "application/json"})
        response = await asyncio.to_thread(urllib.request.urlopen, request, timeout=30)
        assert response.headers["X-Sm121-Upstream"] == "fake-second"
        await asyncio.to_thread(invoke_cli, "stop", run.run_id)
    finally:
        await first.stop()
        await second.stop()


def _get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.load(response)
