"""Run a soak: N agents loop on the workload for the duration; every report interval one
"soak" line goes to the JSONL file (flushed), with goodput, errors, engine restarts, engine
memory, KV usage and host memory. An interrupted soak resumes from its file: the time
already soaked counts, and the file only grows."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from sm121.bench.client import BenchClient
from sm121.bench.scenarios.soak.engine_state import engine_state
from sm121.bench.scenarios.soak.interval import Interval
from sm121.bench.scenarios.soak.records import (
    SoakEnd,
    SoakEvent,
    SoakInterval,
    SoakParams,
    SoakStart,
    SoakSummary,
)
from sm121.bench.scenarios.soak.workload import SoakWorkload, workload
from sm121.errors import Sm121Error
from sm121.hosts.host_panel import local_host
from sm121.progress import Say

SoakRecord = SoakStart | SoakEvent | SoakInterval | SoakEnd


@dataclass(frozen=True)
class SoakRequest:
    url: str
    model: str
    workload: str
    agents: int
    duration_s: float
    report_every_s: float
    out: Path
    resume: bool = False
    max_tokens: int | None = None  # None: the workload's own output sizes
    slo_s: float = 60.0
    pgid: Callable[[], int | None] = lambda: None  # the engine's process group, if local
    metrics_url: str | None = None  # the engine itself when `url` is a gateway in front

    def params(self) -> SoakParams:
        """What the file records of the request (not its process watch, not its own path)."""
        return SoakParams(url=self.url, model=self.model, workload=self.workload,
                          agents=self.agents, duration_s=self.duration_s,
                          report_every_s=self.report_every_s, resume=self.resume,
                          max_tokens=self.max_tokens, slo_s=self.slo_s,
                          metrics_url=self.metrics_url)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class SoakFile:
    """The JSONL file: a start line, then intervals and events; resumable."""

    def __init__(self, request: SoakRequest) -> None:
        self.path, self.done_s, self.restarts = request.out, 0.0, 0
        self.reported = False  # some turn of the soak said its cached count (resumed ones too)
        if request.out.exists() and not request.resume:
            raise Sm121Error(f"{request.out} already exists",
                             "pass --resume to continue that soak, or --out NEW.jsonl")
        if request.resume and request.out.exists():
            self._resume_from(request.out)
        request.out.parent.mkdir(parents=True, exist_ok=True)
        self.handle = open(request.out, "a")  # noqa: SIM115 (closed by close())
        if self.handle.tell() and not request.out.read_bytes().endswith(b"\n"):
            self.handle.write("\n")  # end an interrupted writer's torn line; readers skip it
        elapsed_s = round(self.done_s, 1)
        if self.done_s == 0:
            self.write(SoakStart(kind="soak-start", what="started", elapsed_s=elapsed_s,
                                 time=_now(), params=request.params()))
        else:
            self.write(SoakEvent(kind="event", what="resumed", elapsed_s=elapsed_s,
                                 time=_now(), params=request.params()))

    def _resume_from(self, path: Path) -> None:
        from sm121.bench.timeline import load_jsonl

        rows = load_jsonl(path)
        if not rows or rows[0].get("kind") != "soak-start":
            raise Sm121Error(f"{path} is not a soak file", "pass a file written by bench soak")
        intervals = [SoakInterval.model_validate(r) for r in rows if r.get("kind") == "soak"]
        self.done_s = float(intervals[-1].elapsed_s) if intervals else 0.0
        self.restarts = intervals[-1].engine_restarts if intervals else 0
        self.reported = any(i.cached_tokens is not None for i in intervals)

    def write(self, record: SoakRecord) -> None:
        self.handle.write(json.dumps(record.to_json()) + "\n")
        self.handle.flush()

    def close(self) -> None:
        self.handle.close()


async def _agent(client: BenchClient, work: SoakWorkload, index: int, box: list[Interval],
                 stop: asyncio.Event) -> None:
    """Loop until stopped; after a failure wait (1 s doubling to 10 s) so a down engine is
    not hammered, and go on: a soak outlives engine restarts."""
    backoff = 1.0
    while not stop.is_set():
        outcome = await work.step(client, index)
        box[0].add(outcome)
        if outcome.ok:
            backoff = 1.0
            continue
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=backoff)
        backoff = min(backoff * 2, 10.0)


class _Reporter:
    def __init__(self, request: SoakRequest, file: SoakFile) -> None:
        self.request, self.file = request, file
        self.started_at: float | None = None  # the engine's process start time
        self.restarts = file.restarts
        self.reported = file.reported  # the cached-count rule reads the whole soak so far

    def report(self, interval: Interval, elapsed_s: float, seconds: float) -> SoakInterval:
        engine = engine_state(self.request.metrics_url or self.request.url, self.request.pgid())
        started = engine.engine_started
        if started is not None:
            if self.started_at is not None and started != self.started_at:
                self.restarts += 1
                self.file.write(SoakEvent(kind="event", what="engine restarted",
                                          elapsed_s=round(elapsed_s, 1), time=_now()))
            self.started_at = started
        host = local_host()
        summary = interval.summary(seconds, self.reported)
        self.reported = self.reported or summary.cached_tokens is not None
        row = SoakInterval(
            kind="soak", time=_now(), elapsed_s=round(elapsed_s, 1),
            interval_s=round(seconds, 1), **asdict(summary),
            engine_up=engine.engine_up, kv_usage_pct=engine.kv_usage_pct,
            engine_rss_gib=engine.engine_rss_gib, engine_restarts=self.restarts,
            mem_available_gib=host["mem_available_gib"], mem_free_gib=host["mem_free_gib"],
            page_cache_gib=host["page_cache_gib"], swap_used_gib=host["swap_used_gib"])
        self.file.write(row)
        return row


def interval_line(row: SoakInterval) -> str:
    """The terminal's line for one interval; its prefix reuse (cached over prompt tokens of
    its turns) says "not reported" where no turn of the soak so far said a cached count."""
    if row.cached_tokens is None:
        reuse = "not reported"
    else:
        reuse = f"{row.cached_tokens / row.prompt_tokens:.1%}" if row.prompt_tokens else "-"
    return (f"{row.elapsed_s:.0f} s: goodput {row.goodput_tok_s} tok/s, {row.requests_ok} ok, "
            f"{row.errors} errors, restarts {row.engine_restarts}, KV {row.kv_usage_pct} %, "
            f"prefix reuse {reuse}")


@dataclass
class _Totals:
    """The whole soak's counts, summed over its intervals."""

    requests_ok: int = 0
    errors: int = 0
    completion_tokens: int = 0

    def add(self, row: SoakInterval) -> None:
        self.requests_ok += row.requests_ok
        self.errors += row.errors
        self.completion_tokens += row.completion_tokens


async def run_soak(request: SoakRequest, say: Say) -> SoakSummary:
    file = SoakFile(request)
    work = workload(request.workload, request.max_tokens)
    reporter = _Reporter(request, file)
    box, stop = [Interval(request.slo_s)], asyncio.Event()
    remaining = request.duration_s - file.done_s
    begun = time.monotonic()
    totals = _Totals()
    # Until the duration is over: Ctrl-C keeps this.
    status: Literal["complete", "interrupted"] = "interrupted"
    try:
        async with BenchClient(request.url, request.model, api=work.api) as client:
            say(f"soak workload: {work.name}")
            await work.prepare(client)
            agents = [asyncio.create_task(_agent(client, work, i, box, stop))
                      for i in range(request.agents)]
            last = begun
            while (now := time.monotonic()) - begun < remaining:
                await asyncio.sleep(min(request.report_every_s, remaining - (now - begun)))
                now = time.monotonic()
                done, box[0] = box[0], Interval(request.slo_s)
                row = reporter.report(done, file.done_s + now - begun, now - last)
                last = now
                totals.add(row)
                say(interval_line(row))
            stop.set()
            for task in agents:  # turns still in flight count in no interval
                task.cancel()
            await asyncio.gather(*agents, return_exceptions=True)
        status = "complete"
    finally:
        elapsed = file.done_s + time.monotonic() - begun
        file.write(SoakEnd(kind="soak-end", status=status, elapsed_s=round(elapsed, 1),
                           time=_now(), **asdict(totals), engine_restarts=reporter.restarts))
        file.close()
    return SoakSummary(status=status, elapsed_s=round(elapsed, 1), **asdict(totals),
                       engine_restarts=reporter.restarts, out=str(request.out))
