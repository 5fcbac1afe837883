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


__all__ = ["register", "agent_params", "_ints"]
