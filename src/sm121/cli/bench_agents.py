"""`sm121 bench agents`, `bench replay` and `bench sweep`: the agent workload commands."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from sm121.cli.bench import AS_JSON, MODEL, OUT, URL, _ints, run_cli_scenario
from sm121.errors import Sm121Error

WORKLOAD_HELP = ("A preset (coding-agent, coding-agent-with-batch, timestamp-first) or a YAML "
                 "file: system_prompt_tokens, task_tokens, tools {count, tokens_each, "
                 "placement}, append_tokens, output_tokens, think_time_s (a number or [min, "
                 "max]), paste {share, tokens}, timestamp_first, background {prompt_tokens, "
                 "context_share, output_tokens, delay_s}, context_share, seed; `preset: NAME` "
                 "starts from a preset. Token sizes shrink to fit the server's max-model-len.")
SLO_HELP = ("SLO terms METRIC_pQ=VALUE, comma-separated; metrics ttft, e2e, itl (s or ms) and "
            "decode (tok/s). Goodput = share of turns meeting every term.")
WORKLOAD = typer.Option("coding-agent", "--workload", "-w", help=WORKLOAD_HELP)
SLO = typer.Option("ttft_p95=2s", "--slo", help=SLO_HELP)
API = typer.Option("chat", "--api", help="chat (default) or completions (messages "
                   "flattened into one prompt).")


def register(bench_app: typer.Typer) -> None:
    bench_app.command("agents")(agents)
    bench_app.command("replay")(replay)
    bench_app.command("sweep")(sweep)


def agent_params(agents: int, turns: int | None, duration: float | None, workload: str,
                 slo: str) -> dict[str, Any]:
    """Checked before anything is sent: a bad workload or SLO fails at once."""
    from sm121.bench.agents.scenario import resolve_workload
    from sm121.bench.agents.slo import parse_slo

    if agents < 1:
        raise Sm121Error("--agents must be at least 1", "example: --agents 4")
    if turns is not None and duration is not None:
        raise Sm121Error("give --turns or --duration, not both", "example: --turns 6")
    parse_slo(slo)
    resolve_workload(workload)
    spec = str(Path(workload).resolve()) if Path(workload).is_file() else workload
    return {"agents": agents, "turns": None if duration else (turns or 6),
            "duration_s": duration, "workload": spec, "slo": slo}


def agents(
    url: str = URL, model: str | None = MODEL, out: Path | None = OUT,
    n_agents: int = typer.Option(4, "--agents", "-n", help="Concurrent agent sessions."),
    turns: int | None = typer.Option(None, "--turns", "-t", help="Turns per session "
                                     "(default 6)."),
    duration: float | None = typer.Option(None, "--duration", help="Seconds instead of "
                                          "--turns: sessions keep taking turns until then."),
    workload: str = WORKLOAD, slo: str = SLO, api: str = API, as_json: bool = AS_JSON,
) -> None:
    """N concurrent coding-agent sessions, each on its own clock: append-only multi-turn chat
    with tools, exact token sizes, per-turn TTFT, decode, prefix reuse and goodput against
    the SLO. Results are written as turns end (Ctrl-C keeps them)."""
    run_cli_scenario("agents", url, model, out, False,
                     agent_params(n_agents, turns, duration, workload, slo), as_json, api)


def replay(
    capture_dir: Path = typer.Argument(..., help="The folder of `sm121 gateway --capture`."),
    url: str = URL, model: str | None = MODEL, out: Path | None = OUT,
    speed: float = typer.Option(1.0, "--speed", help="Replay faster (2 = half the gaps) or "
                                "slower (0.5)."),
    slo: str = SLO, as_json: bool = AS_JSON,
) -> None:
    """Replay a gateway capture: sessions keyed by the gateway's session id, each in its
    original order with the original inter-arrival gaps (over --speed). A redacted capture
    replays with text regenerated to the captured token lengths."""
    from sm121.bench.agents.capture_log import load_capture, schedule
    from sm121.bench.agents.slo import parse_slo

    parse_slo(slo)
    schedule(load_capture(capture_dir), speed)  # a bad folder or speed fails before sending
    run_cli_scenario("replay", url, model, out, False,
                     {"capture_dir": str(capture_dir.resolve()), "speed": speed, "slo": slo},
                     as_json)


def sweep(
    url: str = URL, model: str | None = MODEL, out: Path | None = OUT,
    scenario: str = typer.Option("agents", "--scenario", help="Only agents is swept."),
    ns: str = typer.Option("1,2,4,6,8", "--agents", help="The N values, comma-separated."),
    turns: int | None = typer.Option(None, "--turns", "-t"),
    duration: float | None = typer.Option(None, "--duration"),
    workload: str = WORKLOAD, slo: str = SLO, api: str = API, as_json: bool = AS_JSON,
) -> None:
    """The agents scenario at each N on one server: goodput and TTFT against N, and the
    largest N meeting the SLO (every smaller N meeting it too)."""
    import asyncio
    import os

    from sm121.bench.agents.sweep import run_sweep
    from sm121.bench.results import default_path
    from sm121.bench.runner import Target
    from sm121.cli.bench import progress_bar
    from sm121.cli.output import console, print_json

    if scenario != "agents":
        raise Sm121Error(f"sweep runs the agents scenario, not {scenario!r}",
                         "use --scenario agents")
    values = sorted(set(_ints(ns)))
    if not values or values[0] < 1:
        raise Sm121Error(f"bad --agents {ns!r}", "example: --agents 1,2,4,6,8")
    params = agent_params(1, turns, duration, workload, slo)
    path = out or default_path("sweep-agents")
    target = Target(url, model, api=api, api_key=os.environ.get("SM121_API_KEY"))
    with progress_bar() as update:
        results = asyncio.run(run_sweep(target, values, params, path, update))
    summary = results.data["summary"]
    if as_json:
        print_json(summary)
        return
    for point in summary["points"]:
        console.print(f"N={point['agents']}: goodput {point['goodput']:.1%}, TTFT p95 "
                      f"{point['ttft_p95_s']:.3g} s, SLO {'met' if point['slo_met'] else 'not met'}",
                      highlight=False)
    console.print(f"largest N meeting {summary['slo']}: {summary['largest_n']}")
    console.print(f"results: {path}")


__all__ = ["register", "agent_params", "_ints"]
