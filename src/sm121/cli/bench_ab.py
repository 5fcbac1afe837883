"""`sm121 bench ab` and `sm121 bench report` (kept apart from the scenario commands)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from sm121.bench.results import default_path
from sm121.bench.scenarios import get
from sm121.cli.options import CLUSTER, HOST, TRUST
from sm121.cli.output import console, console_summary, parse_sets, print_json
from sm121.cli.progress import LongWait
from sm121.errors import Sm121Error
from sm121.free_ports import free_port
from sm121.recipes.schema import ArgValue


def _params(prefill_tokens: int | None, short_at: str | None,
            params: list[str] | None) -> dict[str, Any]:
    """Scenario parameters: the common overlap ones, plus --param key=value (YAML values)."""
    result: dict[str, Any] = {k.replace("-", "_"): v for k, v in parse_sets(params).items()}
    if prefill_tokens is not None:
        result["prefill_tokens"] = prefill_tokens
    if short_at:
        result["short_at"] = [float(x) for x in short_at.split(",")]
    return result


def register(bench_app: typer.Typer) -> None:
    bench_app.command("ab")(ab)
    bench_app.command("report")(report)


def ab(
    recipe: str = typer.Argument(..., help="Recipe name or path (served on this machine, or "
                                 "on --cluster's nodes); or RECIPE:PROFILE pairs of different "
                                 "recipes, comma-separated (a cross-engine A/B: "
                                 "tiny-cpu:agent,tiny-llamacpp:agent), without --profiles."),
    profiles: str | None = typer.Option(None, "--profiles", help="Comma-separated profiles; "
                                        "the first is the baseline of the ratios."),
    scenario: str = typer.Option("overlap", "--scenario"),
    reps: int = typer.Option(3, "--reps", help="Repetitions; the order alternates."),
    reps_per_boot: int = typer.Option(1, "--reps-per-boot", help="Repetitions measured on "
                                      "one boot (salted apart, --rest between them)."),
    rest: float = typer.Option(5.0, "--rest", help="Seconds between repetitions on a boot."),
    prefill_tokens: int | None = typer.Option(None, "--prefill-tokens", "-L"),
    short_at: str | None = typer.Option(None, "--short-at"),
    params: list[str] | None = typer.Option(None, "--param", help="Scenario parameter "
                                            "key=value (repeatable), e.g. --param before_s=3"),
    sets: list[str] | None = typer.Option(None, "--set", help="Engine arg for every profile."),
    port: int | None = typer.Option(None, "--port", help="Engine port (default: a free one)."),
    cluster: str | None = CLUSTER,
    host: str = HOST,
    out: Path | None = typer.Option(None, "--out", help="A/B results JSON."),
    resume: bool = typer.Option(False, "--resume", help="Continue the A/B in --out: skip the "
                                "(rep, profile) pairs it already measured."),
    as_json: bool = typer.Option(False, "--json", help="Print the comparison as JSON."),
    agents: int = typer.Option(4, "--agents", help="agents scenario: concurrent sessions."),
    turns: int = typer.Option(6, "--turns", help="agents scenario: turns per session."),
    workload: str = typer.Option("coding-agent", "--workload", help="agents scenario: a "
                                 "preset or YAML file (see `bench agents --help`)."),
    slo: str = typer.Option("ttft_p95=2s", "--slo", help="agents scenario: the SLO; the "
                            "best profile is the one with the highest goodput against it."),
    api: str | None = typer.Option(None, "--api", help="agents scenario: the protocol the "
                                   "sessions speak (chat, messages, responses): the one "
                                   "your agent speaks."),
    trust: bool = TRUST,
) -> None:
    """Serve each profile as `sm121 serve` does (here, or with --cluster on the cluster's
    nodes; supervised when the recipe says so), run the scenario, stop, alternate the order,
    and print one comparison table of medians, spread and ratios."""
    from sm121.bench.ab import AbRequest, run_ab
    from sm121.bench.scenarios.agents.apis import check_api

    get(scenario)  # an unknown scenario fails before anything is served
    if cluster is not None:
        from sm121.cluster.spec import load_cluster

        load_cluster(cluster)  # so does a bad cluster file, not as each boot's failure
    recipes: dict[str, str] = {}
    variants: dict[str, tuple[str, dict[str, ArgValue]]] = {}
    if ":" in recipe and profiles is None:
        from sm121.bench.ab import cross_recipe

        recipe, names, recipes, variants = cross_recipe(recipe)
    else:
        names = [p.strip() for p in (profiles or "").split(",") if p.strip()]
    if len(names) < 1 or reps < 1 or reps_per_boot < 1:
        raise Sm121Error("ab needs at least one profile and one repetition",
                         "example: --profiles agent,batch --reps 3")
    scenario_params = _params(prefill_tokens, short_at, params)
    check_api(scenario, api)
    if scenario == "agents":
        # No --run or --pool-tokens here, unlike bench agents and bench sweep: every profile
        # is a boot of ab's own, whose run the agents scenario finds by its port and whose
        # boot log states its pool. One run or pool given for all the profiles would judge
        # every boot but (at most) one against another's: the profiles may differ in their
        # memory settings (GMU, KV dtype). `--param pool_tokens=N` still reaches the scenario.
        from sm121.bench.scenarios.agents.params import agent_params  # numpy, pydantic: only for agents

        scenario_params = {**agent_params(agents, turns, None, workload, slo).model_dump(),
                           **scenario_params}
    request = AbRequest(recipe, names, scenario, reps, scenario_params,
                        out or default_path(f"ab-{scenario}"), port or free_port(), host,
                        overrides=parse_sets(sets), cluster=cluster, resume=resume, trust=trust,
                        reps_per_boot=reps_per_boot, rest_s=rest, api=api,
                        recipes=recipes, variants=variants)
    with LongWait(f"A/B {scenario}: {', '.join(names)} x {reps}") as wait:
        results = run_ab(request, say=wait.say)
    if as_json:
        print_json(results.data["summary"])
        return
    console_summary(results.data)
    if results.data["summary"].get("boot_effect"):
        from sm121.bench.boot_effect import describe

        console.print("later repetitions on a boot against its first:")
        for line in describe(results.data["summary"]["boot_effect"]):
            console.print(f"  {line}", highlight=False)
    console.print(f"results: {request.out}")


def report(
    results: list[Path] = typer.Argument(..., help="Results JSON files from sm121 bench, or "
                                         "JSONL time series (top --record, bench soak)."),
    out: Path = typer.Option(Path("bench-report"), "--out", help="Directory for report.md and "
                             "the PNG plots."),
    title: str = typer.Option("sm121 bench report", "--title"),
    slo: str | None = typer.Option(None, "--slo", help="Judge agent runs (agents, replay, "
                                   "ab, sweep) against this SLO instead of their own."),
) -> None:
    """Write a Markdown report with tables and PNG plots."""
    from sm121.bench.report.markdown import render_report

    if slo:
        from sm121.bench.scenarios.agents.slo import parse_slo

        parse_slo(slo)
    path = render_report(results, out, title, slo)
    console.print(f"report: {path}")
