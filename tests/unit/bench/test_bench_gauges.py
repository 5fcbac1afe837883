"""The engine's gauges during a run (bench/gauges.py): read by every registered engine's names
from a page (vLLM's, an older vLLM's, llama.cpp's), sampled one GET at a time while a block
runs, kept as peaks and a bounded series, and "not measured" (never zeros) where the endpoint
has no /metrics or a page without the engine's gauges. The pages are served by a fake
/metrics server (aiohttp, this process), which controls what each scrape sees and when."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web
from support.aiohttp_server import served

from sm121.bench import gauges as gauges_module
from sm121.bench.gauges import EngineGauges, GaugeSampler, read_gauges
from sm121.engines.client import EngineClient
from sm121.engines.registry import metric_names

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
VLLM_021 = (FIXTURES / "metrics" / "vllm-0.21-metrics.txt").read_text()
NAMES = metric_names()


def page(kv: float, waiting: int, running: int, kv_name: str = "vllm:kv_cache_usage_perc"
         ) -> str:
    labels = '{engine="0",model_name="m"}'
    return (f"# TYPE {kv_name} gauge\n{kv_name}{labels} {kv}\n"
            f"vllm:num_requests_waiting{labels} {waiting}\n"
            f"vllm:num_requests_running{labels} {running}\n"
            f'vllm:request_success_total{{engine="0",finished_reason="stop"}} 9.0\n')


def test_a_vllm_021_page_gives_the_fullest_pool_and_the_summed_queues() -> None:
    reading = read_gauges(VLLM_021, NAMES)
    assert reading is not None
    assert (reading.kv_usage, reading.waiting, reading.running) == (0.97, 3, 41)


def test_an_older_vllm_and_llama_cpp_are_read_by_their_own_names() -> None:
    older = read_gauges(page(0.5, 1, 2, kv_name="vllm:gpu_cache_usage_perc"), NAMES)
    assert older is not None and (older.kv_usage, older.waiting, older.running) == (0.5, 1, 2)
    llamacpp = read_gauges("llamacpp:requests_processing 4\nllamacpp:requests_deferred 2\n"
                           "llamacpp:prompt_tokens_total 100\n", NAMES)
    assert llamacpp is not None  # llama-server exports no KV usage gauge: not measured
    assert (llamacpp.kv_usage, llamacpp.waiting, llamacpp.running) == (None, 2, 4)


def test_a_page_without_engine_gauges_is_none() -> None:
    gateway_page = ('# TYPE sm121_gateway_inflight gauge\nsm121_gateway_inflight 3.0\n'
                    'sm121_gateway_sessions{state="active"} 2.0\n')
    assert read_gauges(gateway_page, NAMES) is None


class FakeMetrics:
    """A fake /metrics server: it serves `pages` in turn (the last one again), each after
    `delay_s`, and counts the scrapes and how many were in flight at once."""

    def __init__(self, pages: list[str], delay_s: float = 0.0, status: int = 200) -> None:
        self.pages, self.delay_s, self.status = pages, delay_s, status
        self.scrapes = self.inflight = self.most_inflight = 0
        self.times: list[float] = []

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/metrics", self.metrics)
        return app

    async def metrics(self, _: web.Request) -> web.Response:
        self.inflight += 1
        self.most_inflight = max(self.most_inflight, self.inflight)
        self.times.append(time.monotonic())
        try:
            await asyncio.sleep(self.delay_s)
            text = self.pages[min(self.scrapes, len(self.pages) - 1)]
            self.scrapes += 1
            return web.Response(text=text, status=self.status)
        finally:
            self.inflight -= 1


async def sample(fake: FakeMetrics, hold_s: float, **settings: float) -> EngineGauges:
    async with served(fake.app()) as url, aiohttp.ClientSession() as session:
        engine = EngineClient(session, url)
        async with GaugeSampler(engine, time.monotonic(), **settings) as sampler:
            await asyncio.sleep(hold_s)
        return sampler.result()


async def test_the_peaks_and_series_of_a_run() -> None:
    fake = FakeMetrics([page(0.1, 0, 1), page(0.8, 3, 2), page(0.4, 1, 2)])
    found = await sample(fake, 0.5, interval_s=0.05)
    assert found.measured and found.scrapes >= 3 and found.failed == 0
    assert (found.kv_usage_peak, found.waiting_peak, found.running_peak) == (0.8, 3, 2)
    assert found.series[:3] == [(found.series[0][0], 0.1, 0, 1),
                                (found.series[1][0], 0.8, 3, 2),
                                (found.series[2][0], 0.4, 1, 2)]
    assert "KV usage peak 0.80, waiting peak 3, running peak 2" in found.line()
    assert found.peaks().series == [] and found.peaks().waiting_peak == 3


async def test_one_get_at_a_time_and_none_after_the_block() -> None:
    """Each answer takes 0.15 s against an interval of 0.02 s: the next GET waits for the
    last; once the block ends, nothing more is asked."""
    fake = FakeMetrics([page(0.2, 0, 1)], delay_s=0.15)
    found = await sample(fake, 0.6, interval_s=0.02, timeout_s=2.0)
    assert fake.most_inflight == 1 and found.scrapes >= 2
    asked = len(fake.times)
    await asyncio.sleep(0.3)
    assert len(fake.times) == asked


async def test_no_metrics_is_not_measured_and_asked_once() -> None:
    fake = FakeMetrics(["not found"], status=404)
    found = await sample(fake, 0.3, interval_s=0.02)
    assert not found.measured and fake.scrapes == 1
    assert found.line() == "not measured (the endpoint serves no /metrics)"
    assert found.kv_usage_peak is None and found.waiting_peak is None


async def test_a_page_without_engine_gauges_is_not_measured() -> None:
    fake = FakeMetrics(["sm121_gateway_inflight 3.0\n"])
    found = await sample(fake, 0.3, interval_s=0.02)
    assert not found.measured and fake.scrapes == 1 and "gateway" in (found.note or "")


async def test_a_silent_engine_is_counted_not_waited_for() -> None:
    fake = FakeMetrics([page(0.2, 0, 1)], delay_s=1.0)
    found = await sample(fake, 0.5, interval_s=0.05, timeout_s=0.1)
    assert not found.measured and found.failed >= 2
    assert found.line() == "not measured (no scrape answered within 0.1 s)"


async def test_the_series_stays_bounded_and_evenly_spaced(monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    monkeypatch.setattr(gauges_module, "MAX_POINTS", 8)
    fake = FakeMetrics([page(i / 10_000, 0, i) for i in range(10_000)])
    found = await sample(fake, 0.6, interval_s=0.0)
    assert found.scrapes > 16 and len(found.series) <= 8
    running = [point[3] for point in found.series]
    steps = {b - a for a, b in zip(running, running[1:], strict=False)}
    assert running[0] == 0 and len(steps) == 1  # every stride-th reading, from the first
    assert found.running_peak == found.scrapes - 1  # the peak saw every scrape
