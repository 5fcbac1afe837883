"""`sm121 bench agent-check`: the agent conformance suite against one endpoint."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from sm121.cli.bench_common import progress_bar
from sm121.cli.output import console, print_json

if TYPE_CHECKING:
    from sm121.bench.scenarios.agent_check.report_file import AgentCheckReport


def register(bench_app: typer.Typer) -> None:
    bench_app.command("agent-check")(agent_check)


def agent_check(
    url: str = typer.Option(..., "--url", help="Base URL of the OpenAI-compatible server "
                            "(the engine, or the sm121 gateway in front of it)."),
    model: str | None = typer.Option(None, "--model", help="Served model (default: the "
                                     "first of /v1/models)."),
    api_key: str | None = typer.Option(None, "--api-key", envvar="SM121_API_KEY",
                                       help="Bearer key (or SM121_API_KEY; the environment "
                                       "keeps it off the command line)."),
    cases: str = typer.Option("", "--cases", help="Only these cases or groups, comma-"
                              "separated (e.g. tools,api.models)."),
    long_tokens: int | None = typer.Option(None, "--long-tokens", help="Cap the near-limit "
                                           "prompt (default: max_model_len minus 256)."),
    out: Path | None = typer.Option(None, "--out", help="Write the report: FILE.json and "
                                    "FILE.md beside it."),
    label: str | None = typer.Option(None, "--label", help="Name the target in the report "
                                     "instead of its URL."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
    api: str = typer.Option("chat", "--api", help="The protocol checked: chat (completions, "
                            "with the endpoint-wide checks), messages (Anthropic, Claude "
                            "Code's) or responses (Codex's)."),
) -> None:
    """Does this endpoint work for agent clients? Tool calling (tool_choice auto, none,
    required, named; streamed and parallel calls; a tool result sent back), reasoning
    separation, usage in the last chunk, max_tokens / stop / seed, /v1/models, /tokenize with
    tools, /v1/responses, /v1/messages, and the context limit (400 over it, served near it).
    `--api messages` or `--api responses` runs the same flows (tools auto / any or required /
    named, streamed calls assembled, the tool result on the next turn, usage in the stream,
    stop, max tokens, count_tokens, overflow, a long input) in that protocol.
    Each case: pass, fail or unsupported, with the evidence. Exits 1 when a case fails."""
    from sm121.bench.scenarios.agent_check import run_agent_check
    from sm121.bench.scenarios.agent_check.report import markdown

    only = [c.strip() for c in cases.split(",") if c.strip()]
    with progress_bar() as update:
        report = asyncio.run(run_agent_check(
            url.rstrip("/"), model, api_key=api_key or os.environ.get("SM121_API_KEY"),
            only=only, long_tokens=long_tokens, label=label, api=api,
            progress=update))
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.with_suffix(".json").write_text(json.dumps(report.to_json(), indent=2) + "\n")
        out.with_suffix(".md").write_text(markdown(report))
    if as_json:
        print_json(report.to_json())
    else:
        _print(report, out)
    if report.summary.fail:
        raise typer.Exit(1)


def _print(report: AgentCheckReport, out: Path | None) -> None:
    from rich.table import Table

    style = {"pass": "green", "fail": "bold red", "unsupported": "yellow"}
    table = Table("case", "result", "why", title=f"agent-check {report.target}")
    for case in report.cases:
        table.add_row(case.name, f"[{style[case.status]}]{case.status.value}[/]", case.reason)
    console.print(table)
    console.print(f"summary: {report.summary.to_json()}"
                  + (" (interrupted: the cases above were checked)" if report.interrupted
                     else ""))
    if out is not None:
        console.print(f"report: {out.with_suffix('.json')}, {out.with_suffix('.md')}")
