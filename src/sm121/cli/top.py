"""`sm121 top`: a live view of runs (engine and gateway /metrics) and their hosts."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from sm121.cli.output import console
from sm121.errors import Sm121Error


def register(app: typer.Typer) -> None:
    app.command("top")(top)


def top(
    runs: list[str] | None = typer.Argument(None, help="Run ids (or unique prefixes); default: "
                                            "every running run."),
    urls: list[str] | None = typer.Option(None, "--url", help="Watch this server instead "
                                          "(repeatable): an engine or an sm121 gateway, told "
                                          "apart by its /metrics."),
    interval: float = typer.Option(2.0, "--interval", help="Seconds between samples; rates "
                                   "and p50/p95 cover this interval."),
    once: bool = typer.Option(False, "--once", help="One interval, then exit (implies JSON "
                              "without a terminal)."),
    as_json: bool = typer.Option(False, "--json", help="One JSON object per interval."),
    record: Path | None = typer.Option(None, "--record", help="Append every sample to this "
                                       "JSONL file (`sm121 bench report FILE` plots it)."),
    samples: int | None = typer.Option(None, "--samples", help="Stop after N samples (JSON)."),
    remote_every: float = typer.Option(15.0, "--remote-every", help="Seconds between host "
                                       "probes of cluster nodes over ssh."),
) -> None:
    """Engine (running/waiting, KV %, prefix-cache hits, tok/s, TTFT/ITL/e2e p50/p95,
    preemptions, speculative acceptance), gateway (lanes, queue, wait p95, policy, locality,
    upstream failures) and host memory per node (MemAvailable vs MemFree, page cache, swap,
    load). Keys: q quits, n toggles runs/nodes. Without a terminal, or with --json, prints one
    JSON object per interval."""
    from sm121.monitor.sampler import Sampler
    from sm121.monitor.top import Recorder, run_json, run_live

    if interval <= 0:
        raise Sm121Error(f"--interval {interval} must be above 0", "example: --interval 2")
    sampler = Sampler(_targets(runs or [], urls or []), remote_period_s=remote_every)
    recorder = Recorder(record, interval)
    try:
        if as_json or once or samples is not None or not sys.stdin.isatty() \
                or not sys.stdout.isatty():
            run_json(sampler, interval, once, recorder, _emit, samples)
        else:
            run_live(sampler, interval, recorder, console)
    except KeyboardInterrupt:
        pass  # every recorded line is already on disk
    finally:
        sampler.close()
        recorder.close()


def _emit(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def _targets(runs: list[str], urls: list[str]):  # type: ignore[no-untyped-def]
    from sm121.launch import control
    from sm121.monitor.targets import from_run, from_url

    if runs and urls:
        raise Sm121Error("give run ids or --url, not both", "e.g. sm121 top RUN, or "
                         "sm121 top --url http://127.0.0.1:8000")
    if urls:
        return [from_url(u) for u in urls]
    chosen = [control.resolve_run(r) for r in runs] if runs else control.active_runs()
    if not chosen:
        raise Sm121Error("no running runs to watch",
                         "start one with `sm121 serve`, or pass --url URL")
    return [from_run(r) for r in chosen]
