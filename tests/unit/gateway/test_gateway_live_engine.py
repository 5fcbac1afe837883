"""`sm121 gateway` in its own process (tests/support/gateway_process.py) never answers 503
while its engine lives, and answers a dead one with a prompt, clear 503.

Live: the purpose-built fake (fake_upstream.py), on its own thread, answers /health later
than the gateway's 2 s health timeout while it serves every other route at once: what a
loaded host looks like from the gateway. Before the fix two slow rounds ejected the only
replica and /v1/models and the gateway's /health answered 503. Dead: nothing listens on the
upstream's port; a refusal is proof, so the answer comes at once, without retries."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from pathlib import Path

import aiohttp
from fake_upstream import FakeUpstream, in_its_own_thread
from support import free_port
from support.gateway_process import GatewayProcess, gateway_process

from sm121.engines.prometheus import parse_metrics

HEALTH_TIMEOUT_S = 2.0  # the gateway's default (RoutingSettings.health_timeout_s)
# Long enough for several failed rounds (a round every 1 s, each failing after 2 s): two in a
# row used to eject the replica, after about 5 s.
WATCH_S = 9.0
CHAT = {"model": "fake", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}


def test_an_engine_whose_health_stalls_gets_every_request_served(tmp_path: Path) -> None:
    slow_health = FakeUpstream(health_delay_s=HEALTH_TIMEOUT_S + 1.5)
    with in_its_own_thread(slow_health) as fake, gateway_process(fake.url, tmp_path) as gw:
        statuses, own, upstreams = asyncio.run(_traffic_while_health_stalls(gw))
        log = gw.log_text()
    assert set(statuses) == {200}, statuses
    assert fake.requests == sum(statuses.values()) > 0
    assert own == {"/v1/models": 200, "/health": 200}, own
    replica = upstreams["upstreams"][0]
    assert replica["healthy"], replica
    assert replica["routing"]["ejections"] == 0, replica
    assert replica["routing"]["spared"] >= 1, replica  # the rounds did fail: it was kept
    assert "kept in the rotation" in log, log[-2000:]


async def _traffic_while_health_stalls(gw: GatewayProcess
                                       ) -> tuple[Counter[int], dict[str, int], dict]:
    """Batches of chat (streamed and not) and completions for WATCH_S; then the gateway's
    own answers: /v1/models, /health, and its view of the upstream."""
    statuses: Counter[int] = Counter()
    async with aiohttp.ClientSession() as http:
        deadline = time.monotonic() + WATCH_S
        while time.monotonic() < deadline:
            batch = [_post(http, f"{gw.url}/v1/chat/completions", {**CHAT, "stream": s})
                     for s in (True, False) * 4]
            batch.append(_post(http, f"{gw.url}/v1/completions",
                               {"model": "fake", "prompt": "hi", "max_tokens": 2}))
            statuses.update(await asyncio.gather(*batch))
            await asyncio.sleep(0.2)
        own = {}
        for path in ("/v1/models", "/health"):
            async with http.get(f"{gw.url}{path}") as answer:
                own[path] = answer.status
        async with http.get(f"{gw.url}/sm121/upstreams") as answer:
            upstreams = await answer.json()
    return statuses, own, upstreams


async def _post(http: aiohttp.ClientSession, url: str, body: dict) -> int:
    async with http.post(url, json=body, timeout=aiohttp.ClientTimeout(total=30)) as answer:
        await answer.read()
        return answer.status


def test_a_dead_engine_gets_a_prompt_clear_503_without_retries(tmp_path: Path) -> None:
    dead = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    with gateway_process(dead, tmp_path) as gw:
        answers, metrics = asyncio.run(_ask_a_dead_engine(gw))
    for status, seconds, retry_after, error in answers:
        assert status == 503, error
        assert error["type"] == "upstream_unavailable"
        assert "refused the connection" in error["message"], error
        assert "nothing listens on its port" in error["message"], error
        assert "sm121 status" in error["message"]
        assert retry_after == "5"
        # A bound on a hang or a retry storm (the retry pause alone is 0.2 s), not on speed.
        assert seconds < 5.0, seconds
    totals = parse_metrics(metrics)
    assert totals.get("sm121_gateway_upstream_errors_total") == len(answers)  # unreachable
    assert 'kind="connect_retried"' not in metrics  # a refusal is proof: never retried


async def _ask_a_dead_engine(gw: GatewayProcess) -> tuple[list[tuple], str]:
    answers = []
    async with aiohttp.ClientSession() as http:
        for stream in (False, True, False, True, False):
            started = time.monotonic()
            async with http.post(f"{gw.url}/v1/chat/completions",
                                 json={**CHAT, "stream": stream}) as answer:
                error = (await answer.json())["error"]
                answers.append((answer.status, time.monotonic() - started,
                                answer.headers.get("Retry-After"), error))
        async with http.get(f"{gw.url}/metrics") as answer:
            metrics = await answer.text()
    return answers, metrics
