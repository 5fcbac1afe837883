"""The engine's gauges during a measurement: KV usage, waiting and running requests, sampled
in the background while the run goes, kept as their peaks and a bounded series.

A counter's delta over a run says what happened (preemptions, prefix-cache hits); a gauge
says how full the engine was, and only while it was: a run bound by max-num-seqs shows as
requests waiting while the running ones sit at the limit, which no delta shows.

The sampler must not disturb what it samples: one GET at a time (the next waits for the last),
a short timeout, only the gauges' lines parsed (an engine's page is mostly histograms), and it
stops with the run. Where the endpoint serves no /metrics (a remote endpoint, a proxy) or a
page without the engine's gauges (a gateway's own), it stops at once and says so: the gauges
are then "not measured", never zeros. The names are every registered engine's
(engines/registry.metric_names: vLLM's and llama.cpp's), newest first."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import aiohttp

from sm121.engines.adapter import MetricNames
from sm121.engines.client import EngineClient
from sm121.engines.engine_error import EngineError
from sm121.engines.prometheus import parse_samples
from sm121.engines.registry import metric_names
from sm121.open_model import Open

INTERVAL_S = 0.5
TIMEOUT_S = 2.0
MAX_POINTS = 240  # the series' bound: a longer run keeps every other point, then every 4th...

Point = tuple[float, float | None, int | None, int | None]  # t, KV usage, waiting, running


@dataclass(frozen=True)
class Reading:
    """One page's gauges; None where the engine exports no such gauge."""

    kv_usage: float | None  # 0..1, the fullest pool where there are several (data parallel)
    waiting: int | None  # summed over the engine's label sets
    running: int | None


class EngineGauges(Open):
    """The engine's gauges over a run (a results file's sample, `kind` "gauges"): their peaks
    and a series bounded to MAX_POINTS (t in seconds since the run's start)."""

    kind: Literal["gauges"] = "gauges"
    interval_s: float | None = None
    scrapes: int = 0  # pages read that carried at least one gauge
    failed: int = 0  # scrapes that got no answer within the timeout
    kv_usage_peak: float | None = None
    waiting_peak: int | None = None
    running_peak: int | None = None
    note: str | None = None  # why nothing was measured, when nothing was
    series: list[tuple[float, float | None, int | None, int | None]] = []

    @property
    def measured(self) -> bool:
        return self.scrapes > 0

    def peaks(self) -> EngineGauges:
        """The same without its series (a summary's copy)."""
        return self.model_copy(update={"series": []})

    def line(self) -> str:
        """The peaks as the console and the report say them."""
        if not self.measured:
            return f"not measured ({self.note or 'no scrape answered'})"

        def shown(value: float | int | None, fmt: str = "{}") -> str:
            return "not exported" if value is None else fmt.format(value)

        kv = self.kv_usage_peak  # a big pool's usage can sit under 1%: two figures then
        return (f"KV usage peak {shown(kv, '{:.2f}' if kv is None or kv >= 0.01 else '{:.2g}')}"
                f", waiting peak "
                f"{shown(self.waiting_peak)}, running peak {shown(self.running_peak)} "
                f"({self.scrapes} scrapes, every {self.interval_s:g} s"
                + (f"; {self.failed} unanswered" if self.failed else "") + ")")


def read_gauges(text: str, names: MetricNames) -> Reading | None:
    """The gauges of one /metrics page, by the engines' names (the first one exported wins);
    None when the page carries none of them. Only their lines are parsed."""
    wanted = {*names.kv_usage, *names.waiting, *names.running}
    lines = [line for line in text.splitlines()
             if line and line[0] != "#" and _name(line) in wanted]
    values: dict[str, list[float]] = {}
    for name, _, value in parse_samples("\n".join(lines) + "\n"):
        values.setdefault(name, []).append(value)
    if not values:
        return None

    def first(choices: tuple[str, ...]) -> list[float] | None:
        return next((values[n] for n in choices if n in values), None)

    kv, waiting, running = first(names.kv_usage), first(names.waiting), first(names.running)
    return Reading(kv_usage=None if kv is None else max(kv),
                   waiting=None if waiting is None else round(sum(waiting)),
                   running=None if running is None else round(sum(running)))


def _name(line: str) -> str:
    return line.split("{", 1)[0].split(" ", 1)[0]


class GaugeSampler:
    """`async with GaugeSampler(engine, t0):` samples while the block runs; `result()` after."""

    def __init__(self, engine: EngineClient, t0: float, interval_s: float = INTERVAL_S,
                 timeout_s: float = TIMEOUT_S, names: MetricNames | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.engine, self.t0 = engine, t0
        self.interval_s, self.timeout_s = interval_s, timeout_s
        self.names = names or metric_names()
        self.clock = clock
        self._found = EngineGauges(interval_s=interval_s)
        self._stride = 1  # keep every stride-th reading in the series
        self._seen = 0
        self._task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()

    async def __aenter__(self) -> GaugeSampler:
        self._task = asyncio.create_task(self._loop(), name="engine gauges")
        return self

    async def __aexit__(self, *exc: object) -> None:
        # Stopped by an event, not by cancelling the task: a cancellation that lands as
        # aiohttp's own timeout fires can come back as a TimeoutError, which the loop counts
        # as a failed scrape and goes on, and `await` on the task then waits for ever. A
        # `make test` hung once in the silent-engine test (300 tries alone did not repeat
        # it); with the event the loop ends within one scrape's timeout.
        if self._task is not None:
            self._stop.set()
            await self._task

    def result(self) -> EngineGauges:
        found = self._found
        if not found.measured and found.note is None and found.failed:
            found.note = f"no scrape answered within {self.timeout_s:g} s"
        return found.model_copy()

    async def _loop(self) -> None:
        while not self._stop.is_set():
            started = self.clock()
            try:
                text = await self.engine.metrics_text(self.timeout_s)
            except (aiohttp.ClientError, TimeoutError, EngineError):
                self._found.failed += 1
            else:
                if text is None:
                    self._found.note = "the endpoint serves no /metrics"
                    return
                reading = read_gauges(text, self.names)
                if reading is None:
                    self._found.note = ("its /metrics carries none of the engine's gauges "
                                        "(a gateway's own page?)")
                    return
                # stamped when the page came: a busy API server answers late, and its
                # page says how the engine was when it rendered it, not when it was asked
                self._add(self.clock() - self.t0, reading)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(),
                                       max(0.0, self.interval_s - (self.clock() - started)))

    def _add(self, t: float, r: Reading) -> None:
        found = self._found
        found.scrapes += 1
        if r.kv_usage is not None:
            found.kv_usage_peak = max(found.kv_usage_peak or 0.0, r.kv_usage)
        if r.waiting is not None:
            found.waiting_peak = max(found.waiting_peak or 0, r.waiting)
        if r.running is not None:
            found.running_peak = max(found.running_peak or 0, r.running)
        self._seen += 1
        if (self._seen - 1) % self._stride:
            return
        found.series.append((round(t, 3), None if r.kv_usage is None else round(r.kv_usage, 4),
                             r.waiting, r.running))
        if len(found.series) > MAX_POINTS:  # evenly spaced still: every other point goes
            found.series = found.series[::2]
            self._stride *= 2

