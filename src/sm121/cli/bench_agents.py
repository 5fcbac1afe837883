"""`sm121 bench sweep`: the agents scenario at each N on one server. (`bench agents` and
`bench replay` are registered scenarios: `bench_scenarios` builds them.)"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import typer

from sm121.bench.results import default_path
from sm121.bench.scenarios.agents.texts import (
    POOL_TOKENS_FLAG,
    POOL_TOKENS_HELP,
    RUN_FLAG,
    RUN_HELP,
    SLO_HELP,
    WORKLOAD_HELP,
)
from sm121.cli.bench_common import AS_JSON, MODEL, OUT, URL, ints, progress_bar
from sm121.cli.output import console, print_json
from sm121.errors import Sm121Error

WORKLOAD = typer.Option("coding-agent", "--workload", "-w", help=WORKLOAD_HELP)
SLO = typer.Option("ttft_p95=2s", "--slo", help=SLO_HELP)
# bench agents' --run and --pool-tokens (its params model declares them from the same texts)
RUN = typer.Option(None, RUN_FLAG, help=RUN_HELP)
POOL_TOKENS = typer.Option(None, POOL_TOKENS_FLAG, help=POOL_TOKENS_HELP)
API = typer.Option("chat", "--api", help="chat (default), messages (Anthropic, Claude "
                   "Code's), responses (Codex's), or completions (messages flattened into one "
                   "prompt). The same workload and token-exact prompts on each.")


def register(bench_app: typer.Typer) -> None:
    bench_app.command("sweep")(sweep)


def sweep(
    url: str = URL, model: str | None = MODEL, out: Path | None = OUT,
    scenario: str = typer.Option("agents", "--scenario", help="Only agents is swept."),
    ns: str = typer.Option("1,2,4,6,8", "--agents", help="The N values, comma-separated."),
    turns: int | None = typer.Option(None, "--turns", "-t"),
    duration: float | None = typer.Option(None, "--duration"),
    workload: str = WORKLOAD, slo: str = SLO, api: str = API,
    run: str | None = RUN, pool_tokens: int | None = POOL_TOKENS, as_json: bool = AS_JSON,
) -> None:
    """The agents scenario at each N on one server: goodput and TTFT against N, and the
    largest N meeting the SLO (every smaller N meeting it too)."""
    # aiohttp (the runner) only when a sweep runs: every `sm121` command loads this module
    from sm121.bench.runner import Target
    from sm121.bench.scenarios.agents.params import agent_params
    from sm121.bench.scenarios.agents.sweep import run_sweep

    if scenario != "agents":
        raise Sm121Error(f"sweep runs the agents scenario, not {scenario!r}",
                         "use --scenario agents")
    values = sorted(set(ints(ns)))
    if not values or values[0] < 1:
        raise Sm121Error(f"bad --agents {ns!r}", "example: --agents 1,2,4,6,8")
    params = agent_params(1, turns, duration, workload, slo, run=run, pool_tokens=pool_tokens)
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
