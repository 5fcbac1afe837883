"""Session admission on the wire: a new session's request is held open while the active ones
fill the budget, a turn of an active session passes meanwhile, and a session that waited its
bound gets the protocol's own overload answer (429 + Retry-After on OpenAI routes, 529
overloaded_error on Messages), which the real openai and anthropic SDKs retry.

The upstream is FakeProtocolEngine (a purpose-built fake: each protocol's reply shape), so the
timing is the test's own; `--sessions 1` (one active session per replica) needs no KV pool.
Against the real tiny engine with a pool: tests/integration/test_gateway_sessions_engine.py.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import anthropic
import openai
import pytest
from fake_protocol_engine import FakeProtocolEngine
from gateway_harness import Running, running_gateway

from sm121.gateway.session_table import SessionSettings

WAIT_S = 0.4


@pytest.fixture
async def engine() -> AsyncIterator[FakeProtocolEngine]:
    fake = await FakeProtocolEngine().start()
    try:
        yield fake
    finally:
        await fake.stop()


def chat(session: str) -> tuple[str, dict[str, Any], dict[str, str]]:
    return ("/v1/chat/completions",
            {"model": "fake", "messages": [{"role": "user", "content": f"task {session}"}]},
            {"X-Session-Id": session})


def messages(session: str) -> tuple[str, dict[str, Any], dict[str, str]]:
    return ("/v1/messages",
            {"model": "fake", "max_tokens": 16,
             "messages": [{"role": "user", "content": f"task {session}"}]},
            {"X-Session-Id": session})


async def post(gw: Running, request: tuple[str, dict[str, Any], dict[str, str]]
               ) -> tuple[int, dict[str, Any], dict[str, str], float]:
    path, body, headers = request
    started = time.perf_counter()
    async with gw.http.post(f"{gw.url}{path}", json=body, headers=headers) as resp:
        data = await resp.json()
        return resp.status, data, dict(resp.headers), time.perf_counter() - started


def one_session(idle_s: float = 60.0, wait_s: float = WAIT_S) -> SessionSettings:
    return SessionSettings(mode="1", wait_s=wait_s, idle_s=idle_s)


async def test_a_new_session_waits_then_gets_429_with_retry_after(
        engine: FakeProtocolEngine) -> None:
    async with running_gateway(engine.url, sessions=one_session()) as gw:
        assert (await post(gw, chat("a")))[0] == 200  # a is active now (idle bound: 60 s)
        status, body, headers, took = await post(gw, chat("b"))
        assert status == 429
        assert took >= WAIT_S * 0.9  # held open for its wait first
        assert body["error"]["type"] == "rate_limit_exceeded"
        assert "waited" in body["error"]["message"]
        assert 1 <= int(headers["Retry-After"]) <= 60
        assert len(engine.seen) == 1  # b never reached the engine
        assert await gw.metric("sm121_gateway_session_refusals_total", reason="timeout") == 1


async def test_messages_get_529_overloaded_error(engine: FakeProtocolEngine) -> None:
    async with running_gateway(engine.url, sessions=one_session()) as gw:
        assert (await post(gw, messages("a")))[0] == 200
        status, body, headers, _ = await post(gw, messages("b"))
        assert status == 529
        assert body["type"] == "error" and body["error"]["type"] == "overloaded_error"
        assert "Retry-After" in headers


async def test_a_turn_of_an_active_session_is_not_queued_behind_a_new_one(
        engine: FakeProtocolEngine) -> None:
    async with running_gateway(engine.url, sessions=one_session(wait_s=5.0)) as gw:
        assert (await post(gw, chat("a")))[0] == 200
        waiting = asyncio.create_task(post(gw, chat("b")))
        await asyncio.sleep(0.2)
        report = await (await gw.http.get(f"{gw.url}/sm121/sessions")).json()
        assert [w["requests"] for w in report["waiting"]] == [1]
        status, _, _, took = await post(gw, chat("a"))  # a's next turn, while b waits
        assert status == 200 and took < 2.0
        assert not waiting.done()
        waiting.cancel()


async def test_a_waiting_session_is_admitted_when_an_active_one_goes_idle(
        engine: FakeProtocolEngine) -> None:
    async with running_gateway(engine.url, sessions=one_session(idle_s=0.5, wait_s=5.0)) as gw:
        assert (await post(gw, chat("a")))[0] == 200
        status, _, headers, took = await post(gw, chat("b"))
        assert status == 200
        assert 0.3 < took < 3.0  # waited for a's idleness, then went
        assert 0.3 < float(headers["X-Sm121-Session-Wait"]) <= took  # and says so
        _, _, headers, _ = await post(gw, chat("b"))
        assert float(headers["X-Sm121-Session-Wait"]) == 0  # its next turn: no wait
        report = await (await gw.http.get(f"{gw.url}/sm121/sessions")).json()
        assert report["admission"]["on"] is True
        assert [a["session"] for a in report["active"]] != []
        assert await gw.metric("sm121_gateway_session_wait_seconds_count") >= 2


async def test_the_openai_sdk_retries_the_429(engine: FakeProtocolEngine) -> None:
    """a goes idle after 1 s; b's first try waits 0.4 s and is told to retry after about
    1 s; the SDK's retry finds a idle and b is served."""
    async with running_gateway(engine.url, sessions=one_session(idle_s=1.0)) as gw:
        assert (await post(gw, chat("a")))[0] == 200
        client = openai.AsyncOpenAI(base_url=f"{gw.url}/v1", api_key="any", max_retries=3,
                                    default_headers={"X-Session-Id": "b"})
        reply = await client.chat.completions.create(
            model="fake", messages=[{"role": "user", "content": "task b"}])
        assert reply.choices[0].message.content == "hello"
        assert await gw.metric("sm121_gateway_requests_total",
                               route="/v1/chat/completions", status="429") >= 1


async def test_the_anthropic_sdk_retries_the_529(engine: FakeProtocolEngine) -> None:
    async with running_gateway(engine.url, sessions=one_session(idle_s=1.0)) as gw:
        assert (await post(gw, messages("a")))[0] == 200
        client = anthropic.AsyncAnthropic(base_url=gw.url, api_key="any", max_retries=3,
                                          default_headers={"X-Session-Id": "b"})
        reply = await client.messages.create(
            model="fake", max_tokens=16, messages=[{"role": "user", "content": "task b"}])
        assert reply.content[0].type == "text"
        assert await gw.metric("sm121_gateway_requests_total",
                               route="/v1/messages", status="529") >= 1


async def test_off_admits_every_session(engine: FakeProtocolEngine) -> None:
    async with running_gateway(engine.url, sessions=SessionSettings(mode="off")) as gw:
        for name in "abcd":
            assert (await post(gw, chat(name)))[0] == 200
        report = await (await gw.http.get(f"{gw.url}/sm121/sessions")).json()
        assert report["admission"]["on"] is False and report["active"] == []


async def test_auto_is_off_while_the_upstream_reports_no_pool(
        engine: FakeProtocolEngine) -> None:
    async with running_gateway(engine.url) as gw:  # the fake has no /metrics
        for name in "abc":
            assert (await post(gw, chat(name)))[0] == 200
        report = await (await gw.http.get(f"{gw.url}/sm121/sessions")).json()
        assert report["admission"]["on"] is False
        assert "KV pool" in report["admission"]["why"]


# ---- with a KV pool (the fake upstream reports one; its /tokenize counts a token per byte) --

def pooled_chat(session: str, chars: int, stream: bool = False
                ) -> tuple[str, dict[str, Any], dict[str, str]]:
    return ("/v1/chat/completions",
            {"model": "fake", "stream": stream,
             "messages": [{"role": "user", "content": "x" * chars}]},
            {"X-Session-Id": session})


async def read_all(gw: Running, request: tuple[str, dict[str, Any], dict[str, str]]
                   ) -> tuple[int, str, float]:
    path, body, headers = request
    started = time.perf_counter()
    async with gw.http.post(f"{gw.url}{path}", json=body, headers=headers) as resp:
        await resp.read()
        return resp.status, resp.headers.get("X-Sm121-Upstream", ""), \
            time.perf_counter() - started


async def test_auto_admits_working_sets_that_fit_the_pool() -> None:
    """Pool 64 blocks of 16, reserve 10% (6): 58 for sessions. A 390-character prompt is 400
    tokens (with the fake's "null" tools), 25 blocks: two fit, the third waits until a turn's usage shrinks one (the fake
    reports 7 prompt tokens)."""
    from fake_upstream import FakeUpstream
    from gateway_harness import discovered

    fake = await FakeUpstream(pool_blocks=64, chunks=4, interval_s=0.3).start()
    try:
        async with running_gateway(fake.url, sessions=SessionSettings(wait_s=10.0)) as gw:
            await discovered(gw, 1)
            first = [asyncio.create_task(read_all(gw, pooled_chat(s, 390, stream=True)))
                     for s in ("a", "b")]
            await asyncio.sleep(0.3)
            third = asyncio.create_task(read_all(gw, pooled_chat("c", 390, stream=True)))
            await asyncio.sleep(0.3)
            report = await (await gw.http.get(f"{gw.url}/sm121/sessions")).json()
            assert report["admission"]["on"] is True, report["admission"]
            assert report["replicas"][0]["capacity"] == 58
            assert sorted(a["blocks"] for a in report["active"]) == [25, 25]
            assert [w["tokens"] for w in report["waiting"]] == [400]
            for task in first:
                assert (await task)[0] == 200
            status, _, took = await third
            assert status == 200 and took > 0.5  # it waited for a turn to end
    finally:
        await fake.stop()


async def test_new_sessions_go_to_the_replica_with_most_headroom_and_stay() -> None:
    from fake_upstream import FakeUpstream
    from gateway_harness import discovered, fake_specs

    fakes = [await FakeUpstream(pool_blocks=64).start() for _ in range(2)]
    try:
        async with running_gateway(upstreams=fake_specs(*fakes)) as gw:
            await discovered(gw, 2)
            homes = [(await read_all(gw, pooled_chat(s, 100)))[1] for s in "abcd"]
            assert homes == ["fake-0", "fake-1", "fake-0", "fake-1"]  # by headroom
            again = [(await read_all(gw, pooled_chat(s, 100)))[1] for s in "abcd"]
            assert again == homes  # a session is never split
    finally:
        for fake in fakes:
            await fake.stop()


def test_the_cli_refuses_a_bad_sessions_value() -> None:
    from support import invoke_cli

    result = invoke_cli("gateway", "--upstream", "http://127.0.0.1:9", "--sessions", "many",
                        check=False)
    assert result.returncode == 2 and "--sessions" in result.stderr and "auto" in result.stderr


async def test_sm121_gateway_sessions_shows_the_state() -> None:
    from fake_upstream import FakeUpstream
    from gateway_harness import discovered
    from support import invoke_cli

    fake = await FakeUpstream(pool_blocks=64).start()
    try:
        async with running_gateway(fake.url) as gw:
            await discovered(gw, 1)
            assert (await read_all(gw, pooled_chat("agent@example.com", 100)))[0] == 200
            shown = await asyncio.to_thread(invoke_cli, "gateway", "sessions", "--url", gw.url)
            assert "auto: on" in shown.stdout and "58 units" in shown.stdout
            assert "active" in shown.stdout and "example.com" not in shown.stdout  # a digest only
            as_json = await asyncio.to_thread(invoke_cli, "gateway", "sessions", "--url",
                                              gw.url, "--json")
            active = json.loads(as_json.stdout)["active"]
            assert len(active) == 1 and active[0]["blocks"] >= 1  # after usage: 7 tokens
    finally:
        await fake.stop()


async def test_a_long_job_counts_against_the_reserve_not_as_a_session() -> None:
    """A 900-token prompt at a long-prompt threshold of 500 is a long job: not a session; while
    it runs its 57 blocks hold the reserve (6) and the excess comes off the sessions' budget."""
    from fake_upstream import FakeUpstream
    from gateway_harness import discovered

    from sm121.gateway.config import UpstreamSpec

    fake = await FakeUpstream(pool_blocks=64, chunks=4, interval_s=0.3).start()
    spec = UpstreamSpec(url=fake.url, name="fake-0", long_prompt_tokens=500)
    try:
        async with running_gateway(upstreams=(spec,)) as gw:
            await discovered(gw, 1)
            job = asyncio.create_task(read_all(gw, pooled_chat("job", 890, stream=True)))
            await asyncio.sleep(0.5)
            report = await (await gw.http.get(f"{gw.url}/sm121/sessions")).json()
            (replica,) = report["replicas"]
            assert replica["long_job_tokens"] >= 890 and replica["reserve_blocks"] >= 56
            assert replica["capacity"] == 64 - replica["reserve_blocks"]
            assert report["active"] == [] and report["waiting"] == []
            assert (await job)[0] == 200
            report = await (await gw.http.get(f"{gw.url}/sm121/sessions")).json()
            assert report["replicas"][0]["long_job_tokens"] == 0
            assert report["replicas"][0]["capacity"] == 58
    finally:
        await fake.stop()
