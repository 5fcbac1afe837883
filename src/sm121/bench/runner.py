"""The harness every scenario runs in: open the client, probe the server first, record the
server's config, write results as samples arrive, and leave a marked file on Ctrl-C."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import aiohttp
from pydantic import BaseModel

from sm121.bench.client import BenchClient
from sm121.bench.result_models import ProbeReport, ServerInfo
from sm121.bench.results import ResultsFile
from sm121.bench.scenarios.probe.run import probe_server
from sm121.bench.server import server_info
from sm121.errors import Sm121Error
from sm121.progress import Progress, quiet

T = TypeVar("T")


@dataclass
class Context:
    """What a scenario gets: the client, its results file, a clock origin and progress."""

    client: BenchClient
    results: ResultsFile
    server: ServerInfo
    progress: Progress = quiet
    t0: float = field(default_factory=time.monotonic)

    def add(self, sample: dict[str, Any] | BaseModel) -> None:
        """Record a sample now (a model is written as its JSON)."""
        self.results.add_sample(sample.model_dump(mode="json") if isinstance(sample, BaseModel)
                                else sample)


Scenario = Callable[[Context, dict[str, Any]], Awaitable[dict[str, Any]]]


@dataclass(frozen=True)
class Target:
    url: str
    model: str | None = None
    stream: bool = True
    api_key: str | None = None
    api: str = "completions"


async def run_together(*coros: Coroutine[Any, Any, T]) -> list[T]:
    """Run coroutines concurrently; the first failure cancels the rest and is raised as
    itself (never swallowed, never a silent None in a results list)."""
    try:
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(c) for c in coros]
    except BaseExceptionGroup as grouped:
        raise first_error(grouped) from None
    return [t.result() for t in tasks]


def first_error(error: BaseException) -> BaseException:
    while isinstance(error, BaseExceptionGroup):
        error = error.exceptions[0]
    return error


async def resolve_model(url: str, model: str | None) -> str:
    if model:
        return model
    async with BenchClient(url, "?") as client:
        try:
            data = (await client.engine.models()).get("data") or []
        except aiohttp.ClientError as exc:
            raise Sm121Error(f"cannot reach {url}: {exc}",
                             "check --url; `sm121 status` lists sm121's runs") from exc
    if not data:
        raise Sm121Error(f"{url}/v1/models lists no model", "pass --model")
    return str(data[0]["id"])


async def run_scenario(name: str, scenario: Scenario, target: Target, params: dict[str, Any],
                       out: Path, progress: Progress = quiet,
                       needs_stream: bool = True) -> ResultsFile:
    """Probe, then run the scenario; the results file is complete, interrupted or failed."""
    results = ResultsFile(out, "scenario", name, params)
    try:
        await _record_scenario(results, scenario, target, params, progress, needs_stream)
    except (aiohttp.ClientError, TimeoutError) as exc:
        raise Sm121Error(f"the server at {target.url} failed mid-scenario: {exc!r}",
                         f"what was measured is kept in {out}; check the server "
                         "(`sm121 logs RUN`) and run again") from exc
    return results


async def _record_scenario(results: ResultsFile, scenario: Scenario, target: Target,
                           params: dict[str, Any], progress: Progress, needs_stream: bool) -> None:
    with results.recording():
        model = await resolve_model(target.url, target.model)
        results.set(stream=target.stream, api=target.api)
        async with BenchClient(target.url, model, stream=target.stream,
                               api_key=target.api_key, api=target.api) as client:
            report = await probe_server(client, progress=progress)
            results.set(probe=report.model_dump(mode="json", exclude_unset=True))
            _require_countable(report, target.stream, needs_stream)
            client.cache_salt = bool(report.cache_salt)
            ctx = Context(client, results, await server_info(client), progress)
            results.set(server=ctx.server.to_json())
            results.set(summary=await scenario(ctx, params))


def _require_countable(report: ProbeReport, stream: bool, needs_stream: bool) -> None:
    if not stream and needs_stream:
        raise Sm121Error("this scenario needs streamed token timestamps",
                         "run it without --no-stream on a server that returns token ids")
    if stream and not report.safe:
        raise Sm121Error(f"streams from this server cannot be counted safely: "
                         f"{report.reason}",
                         "use --no-stream for token counts from usage (no per-token timing)")
