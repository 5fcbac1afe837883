"""Session admission through the real gateway (`sm121 gateway`, its own process) in front of the
real tiny vLLM engine booted with a KV pool made small on purpose (num-gpu-blocks-override):
the gateway reads the pool from the engine's own /metrics, admits the sessions whose working
sets fit it, holds the next one open and answers it 429 with Retry-After, lets a turn of an
active session through meanwhile, and admits the waiting session once an active one went
idle."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.request
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from support import TinyEngine, free_port, run_cli
from support.gateway_process import spawned_gateway
from support.timeouts import BOOT_S, SERVE_S

pytestmark = [pytest.mark.integration, pytest.mark.own_engines]
POOL_BLOCKS = 16  # of 128 tokens on vLLM's CPU backend: 2,048 tokens
WAIT_S, IDLE_S = 3.0, 8.0


@pytest.fixture(scope="module")
def small_pool(sm121_home: Path) -> Iterator[TinyEngine]:
    port = free_port()
    run_cli("serve", "tiny-cpu", "--profile", "agent", "--port", str(port),
            "--set", f"num-gpu-blocks-override={POOL_BLOCKS}", "--set", "max-model-len=1024",
            "--timeout", str(BOOT_S), timeout=SERVE_S)
    run_dir = max((sm121_home / "runs").glob("tiny-cpu-agent-*"),
                  key=lambda p: p.stat().st_mtime)
    engine = TinyEngine(base_url=f"http://127.0.0.1:{port}", model="tiny",
                        run_id=run_dir.name, port=port, run_dir=run_dir)
    try:
        yield engine
    finally:
        run_cli("stop", engine.run_id, check=False)


@pytest.fixture(scope="module")
def gateway(small_pool: TinyEngine, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("sessions-gateway")
    with spawned_gateway(folder, "--upstream", small_pool.base_url, "--recipe", "tiny-cpu",
                         "--session-wait", str(WAIT_S), "--session-idle", str(IDLE_S)
                         ) as gw:
        deadline = time.monotonic() + 60
        while _report(gw.url)["admission"]["on"] is not True:
            assert time.monotonic() < deadline, gw.log_text()
            time.sleep(0.3)
        assert "session admission: auto" in gw.log_text()  # the start-up summary says it
        yield gw.url


def _report(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(f"{url}/sm121/sessions", timeout=5) as response:
        data: dict[str, Any] = json.load(response)
        return data


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=120)) as session:
        yield session


async def _text_of(http: aiohttp.ClientSession, engine: TinyEngine, tokens: int) -> str:
    """Words whose chat prompt is about `tokens` tokens, by the engine's /tokenize."""
    async def count(words: int) -> int:
        body = {"model": "tiny", "add_generation_prompt": True,
                "messages": [{"role": "user", "content": "0 " + " ".join(["a"] * words)}]}
        async with http.post(f"{engine.base_url}/tokenize", json=body) as resp:
            return int((await resp.json())["count"])

    low, high = await count(10), await count(110)
    per_word = (high - low) / 100
    words = max(1, int(10 + (tokens - low) / per_word))
    assert abs(await count(words) - tokens) < 16
    return " ".join(["a"] * words)


def _body(text: str) -> dict[str, Any]:
    return {"model": "tiny", "max_tokens": 4, "temperature": 0,
            "messages": [{"role": "user", "content": text}]}


async def _chat(http: aiohttp.ClientSession, url: str, session: str, text: str
                ) -> tuple[int, dict[str, str], float]:
    started = time.perf_counter()
    async with http.post(f"{url}/v1/chat/completions", json=_body(text),
                         headers={"X-Session-Id": session}) as resp:
        await resp.read()
        return resp.status, dict(resp.headers), time.perf_counter() - started


async def test_the_pool_decides_who_is_admitted(gateway: str, small_pool: TinyEngine,
                                                http: aiohttp.ClientSession) -> None:
    report = _report(gateway)
    (replica,) = report["replicas"]
    assert replica["pool_blocks"] == POOL_BLOCKS  # read from the engine's cache_config_info
    capacity, block = replica["capacity"], replica["block_size"]
    # Prompts sized by the engine's own tokenizer to a third of the budget's blocks (less a
    # margin for the reply): three sessions fit, a fourth does not.
    per_session = capacity // 3
    text = await _text_of(http, small_pool, per_session * block - 24)
    fit = 0
    for index in range(6):
        status, _, _ = await _chat(http, gateway, f"s{index}", f"{index} {text}")
        if status != 200:
            break
        fit += 1
    active = _report(gateway)["active"]
    assert fit == len(active) == 3, active
    assert sum(a["blocks"] for a in active) <= capacity
    # The fourth session waited its bound, was told to retry, and never reached the engine.
    assert status == 429
    # While a new session waits, a turn of an active one passes.
    waiting = asyncio.create_task(_chat(http, gateway, "late", f"late {text}"))
    await asyncio.sleep(0.5)
    assert [w["session"] for w in _report(gateway)["waiting"]]
    status, _, took = await _chat(http, gateway, "s0", f"0 {text} and more")
    assert status == 200 and took < WAIT_S
    status, headers, took = await waiting
    assert status == 429 and took >= WAIT_S * 0.9
    assert 1 <= int(headers["Retry-After"]) <= 60
    # Once the active sessions are idle past the bound, the late one is admitted.
    await asyncio.sleep(IDLE_S + 1.0)
    status, _, _ = await _chat(http, gateway, "late", f"late {text}")
    assert status == 200
    idle = {i["session"] for i in _report(gateway)["idle"]}
    assert len(idle) >= 3
    with urllib.request.urlopen(f"{gateway}/metrics", timeout=5) as response:
        metrics = response.read().decode()
    assert 'sm121_gateway_session_refusals_total{reason="timeout"} 2.0' in metrics
