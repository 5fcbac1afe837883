"""The gateway under 10,000 hostile bodies (tests/support/fuzz.py: random JSON, wrong types,
deep nesting, huge strings, invalid UTF-8, binary, truncated, chunked, huge headers), with
capture, redaction and the locality watch on, against the purpose-built fake upstream
(fake_upstream.py: the point here is volume, and the fake answers in microseconds; the same
fuzz against the real engine is tests/integration/test_gateway_fuzz_engine.py).

Afterwards: no unhandled exception logged, no admission slot held, RSS grown by less than
20 MB, bounded locality sessions and labels, and a normal request answered in under 1 s.
Run with -s to see what each class of body returned.
"""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import time
from contextlib import AsyncExitStack
from pathlib import Path

import aiohttp
from fake_upstream import FakeUpstream
from gateway_harness import Running, running_gateway
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from support.fuzz import Case, Tally, cases, rss_bytes, send

from sm121.gateway.config import CaptureSettings, LocalitySettings

BATCH = 50
EXAMPLES = 200  # x BATCH = 10,000 bodies
WARM_UP = 10  # examples before the RSS baseline: pools, caches and imports settle first
MAX_SESSIONS = 32


class ErrorLog(logging.Handler):
    """Every record at ERROR or above, and any record carrying an exception, from any
    logger (aiohttp.server logs an unhandled handler exception as "Error handling request")."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno >= logging.ERROR or record.exc_info:
            self.records.append(record)


async def _batch(http: aiohttp.ClientSession, gw: Running, batch: list[Case]) -> list[str]:
    return await asyncio.gather(*(send(http, gw.url, case, "fake") for case in batch))


def test_gateway_survives_10000_hostile_bodies(tmp_path: Path) -> None:
    loop = asyncio.new_event_loop()
    errors = ErrorLog()
    logging.getLogger().addHandler(errors)
    stack = AsyncExitStack()
    tally, baseline = Tally(), [0]
    started = time.perf_counter()
    try:
        fake = loop.run_until_complete(FakeUpstream().start())
        stack.push_async_callback(fake.stop)
        gw = loop.run_until_complete(stack.enter_async_context(running_gateway(
            fake.url, max_body_bytes=48 * 1024, max_inflight=16, long_prompt_tokens=8192,
            capture=CaptureSettings(tmp_path / "captures", redact=True),
            locality=LocalitySettings(max_sessions=MAX_SESSIONS))))
        http = loop.run_until_complete(stack.enter_async_context(
            loop.run_until_complete(_session())))

        @settings(max_examples=EXAMPLES, deadline=None, database=None,
                  phases=[Phase.generate], suppress_health_check=list(HealthCheck))
        @given(st.lists(cases(max_huge=64 * 1024), min_size=BATCH, max_size=BATCH))
        def fuzz(batch: list[Case]) -> None:
            for case, outcome in zip(batch, loop.run_until_complete(_batch(http, gw, batch)),
                                     strict=True):
                tally.add(case.kind, outcome)
            if tally.total == WARM_UP * BATCH:
                gc.collect()
                baseline[0] = rss_bytes()

        fuzz()
        loop.run_until_complete(gw.gateway.watch.drain())
        gc.collect()
        growth = rss_bytes() - baseline[0]
        fuzz_s = time.perf_counter() - started
        normal_s = loop.run_until_complete(_normal_request(gw))
        print(json.dumps({"bodies": tally.total, "seconds": round(fuzz_s, 1),
                          "rss_growth_mb": round(growth / 2**20, 1),
                          "normal_request_s": round(normal_s, 3),
                          "outcomes": tally.by_kind()}, indent=1))
        assert tally.total >= 10_000
        assert not tally.failures(), tally.failures()
        assert [r.getMessage() for r in errors.records] == []
        _assert_outcomes_make_sense(tally)
        assert loop.run_until_complete(_slots_held(gw)) == 0
        assert growth < 20 * 2**20, f"RSS grew by {growth / 2**20:.1f} MB"
        assert normal_s < 1.0
        _assert_sessions_bounded(gw)
    finally:
        logging.getLogger().removeHandler(errors)
        loop.run_until_complete(stack.aclose())
        loop.close()


async def _session() -> aiohttp.ClientSession:
    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=64))


async def _normal_request(gw: Running) -> float:
    started = time.perf_counter()
    response = await gw.chat(stream=True)
    assert response.status == 200 and (await response.text()).endswith("data: [DONE]\n\n")
    return time.perf_counter() - started


async def _slots_held(gw: Running) -> float:
    held = 0.0
    for lane in ("general", "long"):
        held += await gw.metric("sm121_gateway_inflight", lane=lane)
        held += await gw.metric("sm121_gateway_queue_depth", lane=lane)
    return held


def _assert_outcomes_make_sense(tally: Tally) -> None:
    table = tally.by_kind()
    # A chunked upload of a valid body is as good as a plain one.
    for kind in ("valid", "chunked"):
        assert set(table.get(kind, {})) <= {"200", "404"}, (kind, table[kind])
    for kind in ("deep", "invalid_utf8", "binary", "truncated"):
        assert all(o in ("400", "404", "200") for o in table.get(kind, {})), (kind, table[kind])
    # Only a header too large for the parser may cut the connection; no class may time out.
    clients = {k for k, v in tally.outcomes.items() if k[1].startswith("client:")}
    assert all(kind == "huge_headers" for kind, _ in clients), clients


def _assert_sessions_bounded(gw: Running) -> None:
    sessions = gw.gateway.watch.report()["sessions"]
    assert len(sessions) <= MAX_SESSIONS
    labels = {s.labels["session"] for metric in gw.gateway.metrics.reuse.collect()
              for s in metric.samples}
    assert labels <= {s["session"] for s in sessions}
