"""`sm121 serve` puts the gateway in front of an engine whose recipe's request policy strips
or rejects parameters (DS4: repetition_penalty kills the container); `--no-gateway` opts out
with a warning naming what then reaches the engine; tiny-cpu (a policy that protects nothing)
is served as before. The start-up summary's call goes to the gateway."""

from __future__ import annotations

import asyncio
import json
import urllib.request
from pathlib import Path

import pytest
from fake_upstream import FakeUpstream
from support import free_port, invoke_cli

from sm121.cli import serve_ready
from sm121.plan.build import build_plan
from sm121.runs.state import RunInfo, Timings, create_run_dir, now_iso

DS4 = "deepseek-v4-flash-eugr-agent"


def test_a_policy_recipe_is_planned_behind_its_gateway() -> None:
    out = invoke_cli("serve", DS4, "--dry-run").stdout
    assert "gateway: http://127.0.0.1:8100/v1 in front of the engine" in out
    assert "repetition_penalty: strip" in out and "agents use this URL" in out


def test_no_gateway_warns_what_the_engine_is_exposed_to() -> None:
    done = invoke_cli("serve", DS4, "--dry-run", "--no-gateway")
    text = " ".join((done.stdout + done.stderr).split())
    assert "gateway: http://" not in text
    assert "--no-gateway: the engine is reached directly" in text
    assert "repetition_penalty (strip in the policy: crashes the DSpark path" in text


def test_tiny_cpu_is_served_without_a_gateway_unless_asked() -> None:
    assert "gateway:" not in invoke_cli("serve", "tiny-cpu", "--dry-run").stdout
    assert "gateway: http://127.0.0.1:8100/v1" in invoke_cli(
        "serve", "tiny-cpu", "--dry-run", "--gateway").stdout


async def test_the_summary_calls_the_gateway(sm121_home: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """After the engine is ready (a fake one here), the real gateway starts, and the summary's
    curl and the URL agents should use are the gateway's, which strips the policy's params."""
    fake = await FakeUpstream().start()
    run = RunInfo(run_id="fake-summary-run", recipe="tiny-cpu", profile="agent",
                  created=now_iso(), base_url=fake.url, model="fake", status="ready",
                  timings=Timings(process_started_s=0.1, port_open_s=1.0, first_generation_s=2.0))
    create_run_dir(run.run_id)
    run.save()
    port = free_port()
    plan = build_plan("tiny-cpu", "agent", None, {}, free_port(), "127.0.0.1")
    try:
        await asyncio.to_thread(serve_ready.after_ready, run, plan, port, None)
        out = capsys.readouterr().out
        url = f"http://127.0.0.1:{port}"
        assert f"curl -s {url}/v1/chat/completions" in out
        assert f"{url}/v1  (agents should use this URL)" in out
        assert f"curl -s {fake.url}" not in out
        # the fake reports no KV pool: auto stays off, and the summary says why
        assert "session admission auto: off" in out and "KV pool" in out
        body = json.dumps({"model": "fake", "prompt": "x", "repetition_penalty": 2.0}).encode()
        request = urllib.request.Request(f"{url}/v1/completions", data=body,
                                         headers={"Content-Type": "application/json"})
        response = await asyncio.to_thread(urllib.request.urlopen, request, timeout=30)
        assert response.headers["X-Sm121-Stripped-Params"] == "repetition_penalty"
    finally:
        await asyncio.to_thread(invoke_cli, "stop", run.run_id)
        await fake.stop()
