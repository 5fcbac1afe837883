"""The harness every scenario runs in, and the one way to run one: `run_scenario(scenario,
target, params)` opens the client, probes the server first, records the server's config,
writes results as samples arrive, leaves a marked file on Ctrl-C, and hands back the run in
the scenario's own models (`ScenarioResults[Sample, Summary]`). The CLI, `bench ab`, the
agents sweep, tune and the knee on a recipe all call it."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Mapping
from pathlib import Path
from typing import Any, TypeVar

import aiohttp
from pydantic import BaseModel

from sm121.bench.client import BenchClient
from sm121.bench.context import Context, Target
from sm121.bench.result_models import ProbeReport, ScenarioResults
from sm121.bench.results import ResultsFile
from sm121.bench.scenario import SampleT, Scenario, SummaryT
from sm121.bench.scenarios.probe.run import probe_server
from sm121.bench.server import server_info
from sm121.errors import Sm121Error
from sm121.progress import Progress, quiet

T = TypeVar("T")
__all__ = ["Context", "Target", "first_error", "resolve_model", "run_scenario", "run_together"]


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


async def run_scenario(scenario: Scenario[SampleT, SummaryT], target: Target,
                       params: Mapping[str, Any] | BaseModel, out: Path, *,
                       progress: Progress = quiet, header: Mapping[str, Any] | None = None
                       ) -> ScenarioResults[SampleT, SummaryT]:
    """Probe, then run the scenario with its params (checked into `scenario.params`); the
    results file at `out` is complete, interrupted or failed, and the complete run comes back
    in the scenario's models. `header`: fields the file carries beside the run (the boot it
    ran on), written before it starts so a failed run keeps them too."""
    given = params.model_dump(mode="json") if isinstance(params, BaseModel) else dict(params)
    results = ResultsFile(out, "scenario", scenario.name, given)
    if header:
        results.set(**header)
    try:
        await _record_scenario(results, scenario, target, given, progress)
    except (aiohttp.ClientError, TimeoutError) as exc:
        raise Sm121Error(f"the server at {target.url} failed mid-scenario: {exc!r}",
                         f"what was measured is kept in {out}; check the server "
                         "(`sm121 logs RUN`) and run again") from exc
    return scenario.read_run(results.data)


async def _record_scenario(results: ResultsFile, scenario: Scenario[Any, Any], target: Target,
                           params: dict[str, Any], progress: Progress) -> None:
    with results.recording():
        checked = scenario.params.model_validate(params)
        model = await resolve_model(target.url, target.model)
        results.set(stream=target.stream, api=target.api)
        async with BenchClient(target.url, model, stream=target.stream,
                               api_key=target.api_key, api=target.api) as client:
            report = await probe_server(client, progress=progress)
            results.set(probe=report.model_dump(mode="json", exclude_unset=True))
            _require_countable(report, target.stream, scenario.needs_stream)
            client.cache_salt = bool(report.cache_salt)
            ctx = Context(client, results, await server_info(client), progress)
            results.set(server=ctx.server.to_json())
            summary = await scenario.run(ctx, checked)
            results.set(summary=summary.model_dump(mode="json", exclude_unset=True,
                                                   by_alias=True))


def _require_countable(report: ProbeReport, stream: bool, needs_stream: bool) -> None:
    if not stream and needs_stream:
        raise Sm121Error("this scenario needs streamed token timestamps",
                         "run it without --no-stream on a server that returns token ids")
    if stream and not report.safe:
        raise Sm121Error(f"streams from this server cannot be counted safely: "
                         f"{report.reason}",
                         "use --no-stream for token counts from usage (no per-token timing)")
