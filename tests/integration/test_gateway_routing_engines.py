"""One gateway in front of two real tiny vLLM engines (`sm121 gateway --runs A,B`).

The session engine (`tiny_engine`, model `tiny`) is replica A. B is one more engine of its
own (`replica_b`, tests/integration/conftest.py: routing needs two), from a copy of the
tiny-cpu recipe whose model is `tiny-b` with the alias `tiny`: B is both a second model
(tiny-b, only there) and a second replica of `tiny`. test_memory_cpu_pool reads the same
boot's KV pool. The last test kills B mid-stream (SIGKILL: a crash, not a clean stop)."""

from __future__ import annotations

import json
import os
import signal
import time
import urllib.request
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from support import TinyEngine
from support.gateway_process import spawned_gateway

from sm121.gateway.routing import weight
from sm121.gateway.sessions import session_id
from sm121.hosts.processes import group_alive

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def gateway(tiny_engine: TinyEngine, replica_b: TinyEngine,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("routing-gateway")
    # Session admission (on by default where the engines show their pools) places a new
    # session on the replica with the most working-set headroom (docs/sessions.md); this
    # module tests the rendezvous routing and the ejection beneath it, so it turns it off.
    with spawned_gateway(folder, "--runs", f"{tiny_engine.run_id},{replica_b.run_id}",
                         "--sessions", "off") as gateway:
        _wait_discovered(gateway.url, gateway.log)
        yield gateway.url


def _wait_discovered(url: str, log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with urllib.request.urlopen(f"{url}/sm121/upstreams", timeout=5) as response:
            if all(u["discovered"] for u in json.load(response)["upstreams"]):
                return
        time.sleep(0.3)
    raise AssertionError(f"the gateway did not discover both engines:\n{log.read_text()}")


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=300)) as session:
        yield session


def _wait_gone(group: int) -> None:
    """SIGKILL is asynchronous: wait until no process of the group runs (zombies excluded)."""
    deadline = time.monotonic() + 30
    while group_alive(group):
        assert time.monotonic() < deadline, f"process group {group} outlived SIGKILL by 30 s"
        time.sleep(0.1)


def _session_owned_by(run_id: str, other: str) -> str:
    """An X-Session-Id whose rendezvous owner is `run_id` (the gateway keys it by the
    header's digest, sessions.session_id)."""
    return next(f"agent-{i}" for i in range(1000)
                if weight(_key(f"agent-{i}"), run_id) > weight(_key(f"agent-{i}"), other))


def _key(header: str) -> str:
    return session_id({"x-session-id": header}, {})


async def _turn(http: aiohttp.ClientSession, url: str, session: str,
                messages: list[dict[str, str]], **extra: Any) -> tuple[str, dict[str, Any]]:
    response = await http.post(f"{url}/v1/chat/completions", headers={
        "X-Session-Id": session}, json={"model": "tiny", "messages": messages,
                                        "max_tokens": 8, "ignore_eos": True, **extra})
    assert response.status == 200, await response.text()
    return response.headers["X-Sm121-Upstream"], await response.json()


async def test_two_models_through_one_url(gateway: str, replica_b: TinyEngine,
                                          http: aiohttp.ClientSession) -> None:
    models = await (await http.get(f"{gateway}/v1/models")).json()
    assert {"tiny", "tiny-b"} <= {m["id"] for m in models["data"]}
    response = await http.post(f"{gateway}/v1/chat/completions", json={
        "model": "tiny-b", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4})
    assert response.status == 200
    assert response.headers["X-Sm121-Upstream"] == replica_b.run_id
    unknown = await http.post(f"{gateway}/v1/chat/completions", json={
        "model": "gpt-5", "messages": [{"role": "user", "content": "hi"}]})
    error = (await unknown.json())["error"]
    assert unknown.status == 404 and error["code"] == "model_not_found"
    assert "'tiny'" in error["message"] and "'tiny-b'" in error["message"]


async def test_a_session_keeps_its_replica_and_its_prefix(gateway: str,
                                                          http: aiohttp.ClientSession) -> None:
    messages = [{"role": "system", "content": "routing test " + "cache block " * 300}]
    served, reuse = set(), []
    for turn in range(4):
        messages.append({"role": "user", "content": f"turn {turn}: go on"})
        upstream, body = await _turn(http, gateway, "affinity-1", messages)
        served.add(upstream)
        usage = body["usage"]
        if turn:
            reuse.append(usage["prompt_tokens_details"]["cached_tokens"]
                         / usage["prompt_tokens"])
        messages.append({"role": "assistant", "content": body["choices"][0]["message"]
                         ["content"]})
    assert len(served) == 1
    assert min(reuse) > 0.7, reuse  # the engine's own count (blocks of 128 tokens on A, 96 on B)


async def test_a_replica_killed_mid_stream(gateway: str, tiny_engine: TinyEngine,
                                           replica_b: TinyEngine,
                                           http: aiohttp.ClientSession) -> None:
    """Its stream ends with an error event and [DONE]; the session's next turn is served by
    the survivor; the ejection is in the metrics. (Last in the module: B stays dead.)"""
    session = _session_owned_by(replica_b.run_id, tiny_engine.run_id)
    messages = [{"role": "user", "content": "write a very long answer"}]
    response = await http.post(f"{gateway}/v1/chat/completions", headers={
        "X-Session-Id": session}, json={"model": "tiny", "messages": messages, "stream": True,
                                        "max_tokens": 20000, "ignore_eos": True})
    assert response.headers["X-Sm121-Upstream"] == replica_b.run_id
    first = await response.content.readany()  # it is streaming
    group = int((replica_b.run_dir / "engine.pid").read_text())
    killed_at = time.monotonic()
    os.killpg(group, signal.SIGKILL)
    _wait_gone(group)
    events = [line[6:] for line in (first + await response.read()).decode().splitlines()
              if line.startswith("data: ")]
    # What the stream ended with, and when: CI once saw it end as a normal completion (stop
    # 27, 45 s); this says which side that was on if it comes back.
    ended = (f"{len(events)} events, the last {events[-3:]}, "
             f"{time.monotonic() - killed_at:.1f} s after the kill")
    assert len(events) >= 2 and events[-1] == "[DONE]", ended
    assert json.loads(events[-2]).get("error", {}).get("type") == "upstream_disconnected", ended
    upstream, _ = await _turn(http, gateway, session, messages)
    assert upstream == tiny_engine.run_id
    metrics = (await (await http.get(f"{gateway}/metrics")).text()).splitlines()
    ejected = [line for line in metrics
               if line.startswith("sm121_gateway_replica_ejections_total")
               and replica_b.run_id in line]
    assert ejected and float(ejected[0].split()[-1]) >= 1
