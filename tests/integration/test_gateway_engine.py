"""The gateway in front of the real tiny vLLM engine, started through `sm121 gateway`:
pass-through with token accounting, the request policy, the context check, abort on client
disconnect, and the locality watch with the engine's own tokenizer and block size."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
from collections.abc import AsyncIterator, Iterator
from typing import Any

import aiohttp
import pytest
from support import SM121, TinyEngine
from support.gateway_process import spawned_gateway

from sm121.gateway.sessions import session_id

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def gateway_url(tiny_engine: TinyEngine, tmp_path_factory: pytest.TempPathFactory
                ) -> Iterator[str]:
    with spawned_gateway(tmp_path_factory.mktemp("gateway"), "--upstream",
                         tiny_engine.base_url, "--recipe", "tiny-cpu", "--long-prompt-tokens",
                         "4000", ready="/v1/models") as gateway:
        yield gateway.url


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=300)) as session:
        yield session


async def _events(response: aiohttp.ClientResponse) -> list[dict[str, Any]]:
    text = await response.text()
    return [json.loads(line[6:]) for line in text.splitlines()
            if line.startswith("data: {")]


async def test_stream_through_gateway_counts_the_tokens_asked(gateway_url: str,
                                                              http: aiohttp.ClientSession
                                                              ) -> None:
    response = await http.post(f"{gateway_url}/v1/chat/completions", json={
        "model": "tiny", "messages": [{"role": "user", "content": "hello"}], "max_tokens": 12,
        "ignore_eos": True, "stream": True, "return_token_ids": True,
        "stream_options": {"include_usage": True}, "repetition_penalty": 1.2})
    events = await _events(response)
    ids = sum(len(c.get("token_ids") or []) for e in events for c in e.get("choices", []))
    assert response.status == 200
    assert response.headers["X-Sm121-Stripped-Params"] == "repetition_penalty"
    assert ids == 12 and events[-1]["usage"]["completion_tokens"] == 12


async def test_bench_style_neutral_penalty_passes(gateway_url: str,
                                                  http: aiohttp.ClientSession) -> None:
    response = await http.post(f"{gateway_url}/v1/completions", json={
        "model": "tiny", "prompt": "abc", "max_tokens": 4, "repetition_penalty": 1.0})
    assert response.status == 200
    assert "X-Sm121-Stripped-Params" not in response.headers
    assert (await response.json())["usage"]["completion_tokens"] >= 1


async def test_context_overflow_refused_before_the_engine(gateway_url: str,
                                                          http: aiohttp.ClientSession) -> None:
    prompt = "word " * 6000  # past the long threshold: counted exactly by the engine's /tokenize
    response = await http.post(f"{gateway_url}/v1/completions", json={
        "model": "tiny", "prompt": prompt, "max_tokens": 65_000})
    error = (await response.json())["error"]
    assert response.status == 400
    assert "max-model-len" in error["message"] and "65,536" in error["message"]


async def test_client_disconnect_frees_the_engine_sequence(gateway_url: str,
                                                           tiny_engine: TinyEngine,
                                                           http: aiohttp.ClientSession) -> None:
    response = await http.post(f"{gateway_url}/v1/completions", json={
        "model": "tiny", "prompt": "go on", "max_tokens": 60_000, "ignore_eos": True,
        "stream": True})
    await response.content.readany()
    assert await _running(http, tiny_engine) == 1
    response.close()  # the agent was interrupted
    for _ in range(100):
        if await _running(http, tiny_engine) == 0:
            return
        await asyncio.sleep(0.2)
    raise AssertionError("the engine kept generating for a client that went away")


async def _running(http: aiohttp.ClientSession, engine: TinyEngine) -> int:
    text = await (await http.get(f"{engine.base_url}/metrics")).text()
    match = re.search(r"^vllm:num_requests_running\{[^}]*\} ([0-9.]+)", text, re.MULTILINE)
    assert match is not None
    return int(float(match.group(1)))


def _conversation(stamp: str, turns: int) -> list[dict[str, str]]:
    """An agent's prompt at a given turn: each turn appends the reply and the next step."""
    system = "You are a careful coding agent. Follow the rules. " * 30
    messages = [{"role": "system", "content": f"[{stamp}] {system}"}]
    for turn in range(turns):
        messages += [_step(turn), {"role": "assistant", "content": f"done {turn}. " * 6}]
    return [*messages, _step(turns)]


def _step(turn: int) -> dict[str, str]:
    return {"role": "user", "content": f"step {turn}: read the file and fix it. " * 6}


async def _session(http: aiohttp.ClientSession, url: str, session: str, moving: bool) -> None:
    for turn in range(4):
        stamp = f"2026-11-29 10:0{turn}" if moving else "2026-11-29"
        response = await http.post(f"{url}/v1/chat/completions", headers={
            "x-session-id": session}, json={"model": "tiny", "max_tokens": 2,
                                            "messages": _conversation(stamp, turn)})
        assert response.status == 200


async def test_locality_report_tells_append_only_from_moving_timestamp(
        gateway_url: str, http: aiohttp.ClientSession) -> None:
    await _session(http, gateway_url, "append-only", moving=False)
    await _session(http, gateway_url, "timestamp-first", moving=True)
    append_only, moving = (session_id({"x-session-id": name}, {})
                           for name in ("append-only", "timestamp-first"))
    sessions = await _wait_for_comparisons(http, gateway_url, {append_only, moving})
    good, bad = sessions[append_only], sessions[moving]
    assert good["last"]["changed"] == "appended" and good["last"]["kept_fraction"] > 0.8
    assert bad["last"]["first_block"] == 0 and bad["last"]["reusable_tokens"] == 0
    assert bad["last"]["changed"].startswith("messages[0].content")
    assert bad["warnings"] == 1 and good["warnings"] == 0
    out = subprocess.run([*SM121, "gateway", "locality", "--url", gateway_url, "--json"],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    assert json.loads(out)["block_size"] == 128  # the CPU engine's own, asked at start-up


async def _wait_for_comparisons(http: aiohttp.ClientSession, url: str,
                                names: set[str]) -> dict[str, Any]:
    for _ in range(150):
        report = await (await http.get(f"{url}/sm121/locality")).json()
        sessions = {s["session"]: s for s in report["sessions"] if s["session"] in names}
        if len(sessions) == len(names) and all(s["compared"] == 3 for s in sessions.values()):
            return sessions
        await asyncio.sleep(0.2)
    raise AssertionError(f"locality analyses did not complete: {report}")
