"""`sm121 memory plan|calibrate|observed`: the KV planner, and its check against real boots."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from sm121.cli import capacity as cap
from sm121.cli.options import CLUSTER, JSON, NODE_GIB, PROFILE, SET
from sm121.cli.output import console, parse_sets, print_json
from sm121.display import plain
from sm121.errors import Sm121Error
from sm121.findings import errors
from sm121.memory.budget import GIB
from sm121.memory.capacity_types import Pool, Throughput
from sm121.memory.cold_start import FreshRate
from sm121.memory.long_job_window import JobRate
from sm121.memory.model import GB10_ASSUMED, MemoryPlan, NodeMemory
from sm121.memory.planner import plan_memory
from sm121.memory.solve import Solution, parse_load, solve
from sm121.recipes.loader import load_recipe
from sm121.sizing.calibration_store import load_observations, load_stored, save_observation
from sm121.sizing.inputs import memory_request
from sm121.sizing.node import node_memory
from sm121.sizing.run_check import RunCheck, check_run

app = typer.Typer(help="The KV memory planner: budget, pool, concurrency; calibrated by boots.",
                  no_args_is_help=True)



def register(main: typer.Typer) -> None:
    main.add_typer(app, name="memory")


@app.command("plan")
def plan_cmd(
    name: str = typer.Argument(..., help="Recipe name or path to a .yaml file."),
    profile: str | None = PROFILE,
    sets: list[str] | None = SET,
    cluster: str | None = CLUSTER,
    node_gib: float | None = NODE_GIB,
    weights_gib: float | None = typer.Option(None, "--weights-gib", help="Weights per rank, "
                                             "GiB (default: safetensors sizes or the recipe)."),
    kv_space: float | None = typer.Option(None, "--kv-space", help="An explicit KV size in "
                                          "GiB (as VLLM_CPU_KVCACHE_SPACE / kv-cache-memory-bytes)."),
    solve_for: str | None = typer.Option(None, "--solve", help="agents=N,context=N[k|m]: the "
                                         "GMU and max-model-len that serve this load; "
                                         "agents=N,workload=W[,turns=T]: how many agents of "
                                         "the workload the pool holds and which resource "
                                         "binds (docs/capacity.md)."),
    pool_tokens: int | None = cap.POOL_TOKENS,
    boot_log: Path | None = cap.BOOT_LOG,
    engine_url: str | None = cap.ENGINE_URL,
    slo: str = typer.Option("ttft_p95=2s", "--slo", help="With workload=: the SLO."),
    prefill_tok_s: float | None = cap.PREFILL_TOK_S,
    decode_tok_s: float | None = cap.DECODE_TOK_S,
    job_prefill_tok_s: float | None = cap.JOB_PREFILL_TOK_S,
    cold_prefill_tok_s: float | None = cap.COLD_PREFILL_TOK_S,
    max_inflight: int | None = cap.MAX_INFLIGHT,
    no_calibration: bool = typer.Option(False, "--no-calibration", help="Ignore observed boots."),
    as_json: bool = JSON,
) -> None:
    """KV budget, KV pool in tokens, max concurrency at max-model-len and the largest context
    that fits, with the arithmetic, for a recipe and profile on a node."""
    request = memory_request(
        load_recipe(name), profile, parse_sets(sets),
        node=node_memory(cluster, node_gib), weights_gib=weights_gib,
        kv_bytes=int(kv_space * GIB) if kv_space is not None else None,
        calibrate=not no_calibration)
    if solve_for and "workload=" in solve_for:
        agents, workload, turns = cap.parse_capacity_load(solve_for)
        memory_plan = plan_memory(request)
        _solve_capacity(name, profile, sets, cluster, memory_plan, agents, workload,
                        turns or 6, cap.given_pool(pool_tokens, boot_log, engine_url,
                                                   memory_plan.block_size), slo,
                        cap.throughput(prefill_tok_s, decode_tok_s), as_json, max_inflight,
                        engine_url, cap.job_rate(job_prefill_tok_s),
                        cap.fresh_rate(cold_prefill_tok_s))
        return
    if solve_for:
        solution = solve(request, parse_load(solve_for))
        print_json(solution) if as_json else print_solution(solution)
        if not solution.feasible or solution.refused:
            raise typer.Exit(1)
        return
    memory_plan = plan_memory(request)
    print_json(memory_plan) if as_json else print_memory_plan(memory_plan)
    if errors(memory_plan.findings):
        raise typer.Exit(1)


@app.command("calibrate")
def calibrate_cmd(
    runs: list[str] = typer.Argument(..., help="Run ids (see `sm121 status`)."),
    node_gib: float | None = NODE_GIB,
    as_json: bool = JSON,
) -> None:
    """Parse each run's engine log (KV pool, concurrency, memory lines), store it as an
    observation of its recipe and profile, and print the planner's prediction against it."""
    from sm121.launch.control import resolve_run

    node = NodeMemory("node", node_gib, "given (--node-gib)") if node_gib else GB10_ASSUMED
    checks: list[RunCheck] = []
    for run_id in runs:
        run = resolve_run(run_id)
        check, observation = check_run(run.directory, node)
        save_observation(observation)
        checks.append(check)
    if as_json:
        print_json([c.model_dump(mode="json") | {"error_pct": c.error_pct} for c in checks])
        return
    print_checks(checks)


@app.command("observed")
def observed_cmd(name: str = typer.Argument(..., help="Recipe name."),
                 as_json: bool = JSON) -> None:
    """The boots observed for a recipe (stored calibrations and the built-in field figures)."""
    try:
        observations = load_observations(load_recipe(name).recipe)
    except Sm121Error:
        observations = load_stored(name)  # a recipe given by path, since moved: its runs' own
    if as_json:
        print_json(observations)
        return
    if not observations:
        raise Sm121Error(f"no observations for {name}", "calibrate a run: sm121 memory calibrate RUN")
    table = Table("profile", "source", "stack", "GMU", "KV GiB", "pool tokens", "chunk",
                  "assumed")
    for o in observations:
        table.add_row(o.profile or "-", o.source + (f" ({o.origin.section})" if o.origin else ""),
                      o.stack.name if o.stack else "this recipe's runs", _fmt(o.gmu),
                      _fmt(o.kv_gib), f"{o.pool_tokens:,}" if o.pool_tokens else "-",
                      _fmt(o.batched_tokens), ", ".join(o.assumed) or "-")
    console.print(table)


def _solve_capacity(name: str, profile: str | None, sets: list[str] | None,
                    cluster: str | None, memory_plan: MemoryPlan, agents: int, workload: str,
                    turns: int, pool: Pool | None, slo: str,
                    rate: Throughput | None, as_json: bool,
                    max_inflight: int | None = None, engine_url: str | None = None,
                    job_rate: JobRate | None = None,
                    fresh_rate: FreshRate | None = None) -> None:
    from sm121.plan.build import build_plan

    serve_plan = build_plan(name, profile, cluster, parse_sets(sets), argv_check=False)
    capacity = cap.capacity_of(
        dict(serve_plan.engine_args), memory_plan.pool_tokens, memory_plan.block_size,
        memory_plan.max_model_len, workload=workload, turns=turns, agents=agents, pool=pool,
        slo=slo, rate=rate, max_inflight=max_inflight, engine_url=engine_url,
        job_rate=job_rate, fresh_rate=fresh_rate)
    if as_json:
        print_json(cap.capacity_json(capacity))
    else:
        cap.print_capacity(capacity)
    if capacity.margin is not None and capacity.margin < 0:
        raise typer.Exit(1)


def print_memory_plan(plan: MemoryPlan) -> None:
    console.print(f"[bold]memory[/] {plan.recipe} profile [bold]{plan.profile or '-'}[/]")
    for line in plan.explanation:
        console.print(f"  {line}", highlight=False)
    if plan.comparisons:
        table = Table("observed boot", "settings", "predicted", "observed", "error",
                      "start-up check: predicted / observed", title="predicted against observed")
        for c in plan.comparisons:
            predicted = (f"{c.predicted_tokens:,} tok" if c.predicted_tokens and c.observed_tokens
                         else f"{c.predicted_kv_gib:.2f} GiB")
            observed = (f"{c.observed_tokens:,} tok" if c.observed_tokens
                        else f"{c.observed_kv_gib:.2f} GiB" if c.observed_kv_gib else "-")
            error = f"{c.error_pct:+.2f}%" if c.error_pct is not None else "-"
            need = f" (need {c.predicted_need_gib:.2f} GiB)" if c.predicted_need_gib else ""
            check = (f"{c.predicted_outcome or '-'}{need} / {c.observed_outcome or '-'}"
                     if c.predicted_outcome or c.observed_outcome else "-")
            where = f" ({c.where})" if c.where else ""
            table.add_row(c.source + where + (" (calibrates)" if c.calibrates else ""), c.settings,
                          predicted, observed, error, check)
        console.print(table)
    for finding in plan.findings:
        color = "red" if finding.severity.value == "error" else "yellow"
        console.print(plain(finding.render(), None, style=color, keep_newlines=True))


def print_solution(solution: Solution) -> None:
    load = solution.load
    head = f"solve {load.agents} agents x {load.context:,} tokens: "
    if solution.feasible and solution.gpu_memory_utilization is not None:
        console.print(f"{head}[green]gpu-memory-utilization {solution.gpu_memory_utilization:.2f}"
                      f", max-model-len {solution.max_model_len}[/]", highlight=False)
    elif solution.feasible:
        console.print(f"{head}[green]KV size {solution.explicit_kv_gib:g} GiB, max-model-len "
                      f"{solution.max_model_len}[/]", highlight=False)
    else:
        console.print(f"{head}[red]cannot be done[/]", highlight=False)
    console.print(f"  {solution.reason}", highlight=False)
    if solution.startup:
        color = "red" if solution.refused else "green"
        console.print(f"  [{color}]{solution.startup}[/]", highlight=False)
    for finding in solution.plan.findings if solution.plan else []:
        color = "red" if finding.severity.value == "error" else "yellow"
        console.print(f"  [{color}]{finding.render()}[/]", highlight=False)


def print_checks(checks: list[RunCheck]) -> None:
    table = Table("run", "settings", "predicted tokens", "observed tokens", "error",
                  "predicted conc.", "observed conc.", title="KV pool: planner against vLLM's log")
    for c in checks:
        table.add_row(c.run_id, c.settings, _fmt(c.predicted_tokens), _fmt(c.observed_tokens),
                      f"{c.error_pct:+.3f}%" if c.error_pct is not None else "-",
                      _fmt(c.predicted_concurrency), _fmt(c.observed_concurrency))
    console.print(table)


def _fmt(value: float | int | None) -> str:
    if value is None:
        return "-"
    return f"{value:,}" if isinstance(value, int) else f"{value:,.2f}"
