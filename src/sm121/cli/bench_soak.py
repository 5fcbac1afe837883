"""`sm121 bench soak`: agents against an endpoint for hours, reported as they go."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

import typer

from sm121.cli.output import console, err_console, print_json
from sm121.durations import parse_duration
from sm121.errors import Sm121Error


def register(bench_app: typer.Typer) -> None:
    bench_app.command("soak")(soak)


def soak(
    url: str = typer.Option(..., "--url", help="Base URL of the endpoint (engine or gateway)."),
    model: str | None = typer.Option(None, "--model", help="Served model (default: the first "
                                     "of /v1/models)."),
    workload: str = typer.Option("coding-agent", "--workload", help="coding-agent (bench "
                                 "agents' sessions, fitted to the engine's context) or "
                                 "chat-loop (a plain multi-turn chat)."),
    agents: int = typer.Option(4, "--agents", help="Concurrent agents."),
    duration: str = typer.Option("72h", "--duration", help="How long: 72h, 30m, 90s, 1d2h."),
    report_every: str = typer.Option("10m", "--report-every", help="One JSONL line per "
                                     "interval."),
    out: Path | None = typer.Option(None, "--out", help="JSONL file (default: "
                                    "bench-results/soak-TIME.jsonl)."),
    resume: bool = typer.Option(False, "--resume", help="Continue the soak in --out."),
    run: str | None = typer.Option(None, "--run", help="The run behind the URL (default: the "
                                   "local run serving URL): its engine's /metrics and its "
                                   "process group's RSS, also when URL is its gateway."),
    metrics_url: str | None = typer.Option(None, "--metrics-url", help="The engine's own URL "
                                           "for /metrics (default: the run's, else URL)."),
    max_tokens: int | None = typer.Option(None, "--max-tokens", help="Tokens per turn "
                                          "(default: the workload's own; chat-loop 48)."),
    slo: float = typer.Option(60.0, "--slo", help="Seconds a turn may take and still count "
                              "as goodput."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
) -> None:
    """Goodput, errors, engine restarts, engine RSS, KV usage and host memory over time.
    Every interval is appended to the JSONL file as it ends; Ctrl-C keeps every line, and
    --resume continues where the file stops. `sm121 bench report FILE` plots it."""
    from sm121.bench.runner import resolve_model
    from sm121.bench.scenarios.soak.runner import SoakRequest, run_soak

    if agents < 1:
        raise Sm121Error("--agents must be at least 1", "example: --agents 4")
    if resume and out is None:
        raise Sm121Error("--resume needs --out FILE", "the soak file to continue")
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    path = out or Path("bench-results") / f"soak-{stamp}.jsonl"
    served = asyncio.run(resolve_model(url, model))
    run_id = _run_of(run, url)
    request = SoakRequest(url.rstrip("/"), served, workload, agents, parse_duration(duration, "--duration"),
                          parse_duration(report_every, "--report-every"), path, resume, max_tokens, slo,
                          pgid=_pgid_reader(run_id),
                          metrics_url=metrics_url or _engine_url(run_id))
    err_console.print(f"soak: {agents} agents, {duration}, report every {report_every} -> "
                      f"{path}", highlight=False)
    summary = asyncio.run(run_soak(request, say=lambda m: err_console.print(m, highlight=False)))
    if as_json:
        print_json(summary.to_json())
    else:
        console.print(f"soak {summary.status}: {summary.elapsed_s:.0f} s, "
                      f"{summary.requests_ok} turns ok, {summary.errors} errors, "
                      f"{summary.engine_restarts} engine restarts; results: {path}")


def _run_of(run_id: str | None, url: str) -> str | None:
    """The run named, else the local run whose engine or gateway serves URL."""
    from sm121.launch import control

    if run_id is not None:
        return control.resolve_run(run_id).run_id
    base = url.rstrip("/").removesuffix("/v1")
    runs = [r for r in control.active_runs() if base in (r.base_url, r.gateway_url)]
    return runs[-1].run_id if runs else None


def _engine_url(run_id: str | None) -> str | None:
    from sm121.runs.state import load_run

    return load_run(run_id).base_url if run_id else None


def _pgid_reader(run_id: str | None):  # type: ignore[no-untyped-def]
    """A callable reading the engine's process group from the run, each time (a supervised
    restart gives it a new one)."""
    from sm121.runs.state import load_run

    def pgid() -> int | None:
        if run_id is None:
            return None
        nodes = [n for n in load_run(run_id).nodes if n.ssh is None and n.name != "gateway"]
        return nodes[0].pgid if nodes else None

    return pgid
