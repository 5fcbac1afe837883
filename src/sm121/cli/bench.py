"""`sm121 bench`: measure an OpenAI-compatible endpoint for agents, A/B profiles, report.

The group: `probe` here, one command per scenario of the table (`bench_scenarios`: listed
from the table, built only when invoked, so a table line is enough),
and the command modules `bench_ab` (ab, report), `bench_agent_check`, `bench_agents`
(sweep) and `bench_soak`. They import `bench_common`, never this module."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import typer

from sm121.bench.results import default_path
from sm121.cli import bench_ab, bench_agent_check, bench_agents, bench_soak
from sm121.cli.bench_common import AS_JSON, MODEL, OUT, URL
from sm121.cli.bench_scenarios import ScenarioGroup
from sm121.cli.output import console, print_json

bench_app = typer.Typer(help="Token-accurate measurements of prefill, decode and admission; "
                        "A/B across profiles; reports with plots.", no_args_is_help=True,
                        cls=ScenarioGroup)


def register(app: typer.Typer) -> None:
    bench_ab.register(bench_app)
    bench_agent_check.register(bench_app)
    bench_agents.register(bench_app)
    bench_soak.register(bench_app)
    app.add_typer(bench_app, name="bench")


@bench_app.command("probe")
def probe(url: str = URL, model: str | None = MODEL, out: Path | None = OUT,
          as_json: bool = AS_JSON) -> None:
    """Does this server report token ids, and how many tokens does a chunk carry? Exits 1
    when streams cannot be counted safely."""
    from sm121.bench.client import BenchClient
    from sm121.bench.results import ResultsFile
    from sm121.bench.runner import resolve_model
    from sm121.bench.scenarios.probe.run import probe_server

    async def go() -> dict[str, Any]:
        async with BenchClient(url, await resolve_model(url, model)) as client:
            return (await probe_server(client)).model_dump(mode="json", exclude_unset=True)

    report = asyncio.run(go())
    results = ResultsFile(out or default_path("probe"), "scenario", "probe", {})
    results.set(probe=report, summary=report)
    results.finish("complete")
    if as_json:
        print_json(report)
    else:
        verdict = "[green]safe[/]" if report["safe"] else f"[red]unsafe[/]: {report['reason']}"
        console.print(f"token ids: {report.get('token_ids')}; counting: {verdict}")
        console.print(f"tokens per chunk (histogram): {report.get('histogram')}, mean "
                      f"{report.get('tokens_per_chunk')}; cache_salt: {report.get('cache_salt')}")
        for name, check in (report.get("apis") or {}).items():
            state = "[green]ok[/]" if check["ok"] else f"[red]refused[/]: {check['reason']}"
            console.print(f"{name}: {state}")
    if not report["safe"]:
        raise typer.Exit(1)
