"""The gateway under 10,000 hostile bodies (tests/support/fuzz.py: random JSON, wrong types,
deep nesting, huge strings, invalid UTF-8, binary, truncated, chunked, huge headers).

The gateway is `sm121 gateway` in its own process, with capture, redaction and the locality
watch on, so that its RSS and its log are its own; the upstream is the purpose-built fake
(fake_upstream.py) in this process: the point is volume, and the fake answers at once. The
same fuzz against the real engine is tests/integration/test_gateway_hostile_engine.py.

Afterwards: no 503 (the upstream lives throughout), no traceback or ERROR in the gateway's
log, no admission slot held, RSS grown by
less than 20 MB, locality sessions and their metric labels bounded, and a normal request
answered in under 1 s. Run with -s to see what each class of body returned.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from pathlib import Path

import aiohttp
from fake_upstream import FakeUpstream, in_its_own_thread
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from support.fuzz import Case, Tally, cases, cpu_seconds, rss_bytes, send_all
from support.gateway_process import GatewayProcess, gateway_process

from sm121.engines.prometheus import parse_metrics

BATCH = 50
EXAMPLES = 200  # x BATCH = 10,000 bodies
WARM_UP = 10  # examples before the RSS baseline: pools, caches and lazy imports settle first
MAX_SESSIONS = 512  # the gateway's default
_SESSION_LABEL = re.compile(r'^sm121_gateway_locality_reusable_fraction\{session="([^"]*)"', re.M)


def test_gateway_survives_10000_hostile_bodies(tmp_path: Path) -> None:
    # The fake on its own thread answers the gateway's /health while hypothesis builds the
    # next batch; the gateway no longer ejects its only replica for a slow /health anyway.
    with in_its_own_thread(FakeUpstream()) as fake:
        _fuzz_through_the_gateway(fake, tmp_path)


def _fuzz_through_the_gateway(fake: FakeUpstream, tmp_path: Path) -> None:
    loop = asyncio.new_event_loop()
    http = loop.run_until_complete(_session())
    tally, baseline = Tally(), [0]
    try:
        with gateway_process(fake.url, tmp_path, "--max-body-mb", "0.05", "--max-inflight",
                             "16", "--long-prompt-tokens", "8192", "--capture",
                             str(tmp_path / "captures"), "--redact") as gw:
            started = time.perf_counter()

            @settings(max_examples=EXAMPLES, deadline=None, database=None,
                      phases=[Phase.generate], suppress_health_check=list(HealthCheck))
            @given(st.lists(cases(), min_size=BATCH, max_size=BATCH))
            def fuzz(batch: list[Case]) -> None:
                outcomes = loop.run_until_complete(send_all(http, gw.url, batch, "fake"))
                for case, outcome in zip(batch, outcomes, strict=True):
                    tally.add(case.kind, outcome)
                if tally.total == WARM_UP * BATCH:
                    baseline[0] = rss_bytes(gw.pid)

            fuzz()
            fuzz_s = time.perf_counter() - started
            cpu_s = {"test_process": cpu_seconds(), "gateway": cpu_seconds(gw.pid)}
            growth = rss_bytes(gw.pid) - baseline[0]
            normal_s = loop.run_until_complete(_normal_request(http, gw))
            metrics, locality = loop.run_until_complete(_own_state(http, gw))
            log = gw.log_text()
    finally:
        loop.run_until_complete(http.close())
        loop.close()
    print(json.dumps({"bodies": tally.total, "seconds": round(fuzz_s, 1),
                      "cpu_seconds": {k: round(v, 1) for k, v in cpu_s.items()},
                      "gateway_rss_growth_mb": round(growth / 2**20, 1),
                      "normal_request_s": round(normal_s, 3),
                      "sessions": len(locality["sessions"]), "outcomes": tally.by_kind()},
                     indent=1))
    assert tally.total >= 10_000
    assert not tally.failures(), tally.failures()
    assert "Traceback" not in log and " ERROR " not in log, log[-3000:]
    _assert_outcomes_make_sense(tally)
    totals = parse_metrics(metrics)
    assert totals["sm121_gateway_inflight"] == 0 and totals["sm121_gateway_queue_depth"] == 0
    assert growth < 20 * 2**20, f"the gateway's RSS grew by {growth / 2**20:.1f} MB"
    # It still answers at once: a bound on a hang, not on speed (make test loads the host).
    assert normal_s < 10.0
    sessions = {s["session"] for s in locality["sessions"]}
    assert len(sessions) <= MAX_SESSIONS
    assert set(_SESSION_LABEL.findall(metrics)) <= sessions


async def _session() -> aiohttp.ClientSession:
    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=64))


async def _normal_request(http: aiohttp.ClientSession, gw: GatewayProcess) -> float:
    body = {"model": "fake", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    started = time.perf_counter()
    async with http.post(f"{gw.url}/v1/chat/completions", json=body) as response:
        assert response.status == 200
        assert (await response.text()).endswith("data: [DONE]\n\n")
    return time.perf_counter() - started


async def _own_state(http: aiohttp.ClientSession, gw: GatewayProcess) -> tuple[str, dict]:
    async with http.get(f"{gw.url}/metrics") as metrics, \
            http.get(f"{gw.url}/sm121/locality") as locality:
        return await metrics.text(), await locality.json()


def _assert_outcomes_make_sense(tally: Tally) -> None:
    table = tally.by_kind()
    # The upstream lives throughout: no body of any kind is answered 503. (A loaded host once
    # stalled the gateway past its connect timeout; the connect is retried now, and a slow
    # /health no longer ejects the only replica.)
    unavailable = {kind: n for (kind, outcome), n in tally.outcomes.items() if outcome == "503"}
    assert not unavailable, unavailable
    # A valid body, plain or uploaded in chunks, is served (the fake has no /v1/responses).
    for kind in ("valid", "chunked"):
        assert set(table.get(kind, {})) <= {"200"}, (kind, table[kind])
    for kind in ("deep", "invalid_utf8", "binary", "truncated"):
        assert set(table.get(kind, {})) <= {"400", "404", "200"}, (kind, table[kind])
    # Only a header too large for the HTTP parser may cut the connection.
    clients = {k for k in tally.outcomes if k[1].startswith("client:")}
    assert all(kind == "huge_headers" for kind, _ in clients), clients
