"""`sm121 serve`, `status`, `logs`, `stop` and `model tiny`."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import typer
from rich.table import Table

from sm121.cli.options import CLUSTER, HOST, PORT, PROFILE, SET
from sm121.cli.output import console, err_console, parse_sets, print_json
from sm121.cli.plan import print_plan
from sm121.errors import Sm121Error
from sm121.launch import control
from sm121.launch.local import serve_local
from sm121.launch.run_state import RunInfo, list_runs
from sm121.plan.build import build_plan
from sm121.plan.model import ServePlan

model_app = typer.Typer(help="Models sm121 makes itself.", no_args_is_help=True)


@model_app.command("tiny")
def model_tiny(directory: Path = typer.Argument(..., help="Where to write the model.")) -> None:
    """Generate the tiny random-weight Llama (tokenizer with chat template, weights) from a
    fixed seed, with no downloads. Needs the engine extra (torch, transformers)."""
    from sm121.models.tiny import generate_tiny_model

    path = generate_tiny_model(directory)
    console.print(f"tiny model in {path}")


def register(app: typer.Typer) -> None:
    app.add_typer(model_app, name="model")
    app.command("serve")(serve)
    app.command("status")(status)
    app.command("logs")(logs)
    app.command("stop")(stop)


def serve(
    name: str = typer.Argument(..., help="Recipe name or path to a .yaml file."),
    profile: str | None = PROFILE,
    cluster: str | None = CLUSTER,
    sets: list[str] | None = SET,
    port: int = PORT,
    host: str = HOST,
    timeout: float | None = typer.Option(None, "--timeout", help="Seconds to wait for the first "
                                         "generation (default: the recipe's readiness timeout)."),
    foreground: bool = typer.Option(False, "--foreground", help="Stay attached; Ctrl-C stops "
                                    "the engine."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the plan and start nothing."),
    trust: bool = typer.Option(False, "--trust", help="Allow the recipe's custom hook commands "
                               "(hooks.custom) to run; built-in hooks need no trust."),
    gateway: bool = typer.Option(False, "--gateway", help="Also start `sm121 gateway` in front "
                                 "of the engine, with the recipe's request policy."),
    gateway_port: int = typer.Option(8100, "--gateway-port", help="Port of the gateway."),
    gateway_join: str | None = typer.Option(None, "--gateway-join", help="Once ready, attach "
                                            "this engine to the gateway of run RUN (started "
                                            "with --gateway): it routes by model, and keeps "
                                            "sessions on their replica."),
) -> None:
    """Start the engine and return once it has generated: readiness is a real completion with
    its token count checked, not an open port. The engine keeps running (see `sm121 status`)
    unless --foreground is given."""
    if gateway and gateway_join:
        raise Sm121Error("give --gateway or --gateway-join, not both",
                         "--gateway starts a new gateway; --gateway-join RUN uses RUN's")
    join = _gateway_registry(gateway_join) if gateway_join else None
    plan = build_plan(name, profile, cluster, parse_sets(sets), port, host)
    if timeout is not None:
        plan = plan.model_copy(update={"readiness": plan.readiness.model_copy(
            update={"timeout_s": timeout})})
    if dry_run:
        print_plan(plan)
        return
    for finding in plan.findings:
        err_console.print(f"[yellow]{finding.render()}[/]", highlight=False)
    if cluster:
        from sm121.launch.cluster_serve import serve_cluster  # multi-node over SSH

        run = serve_cluster(plan, progress=_progress, trust=trust)
        _after_ready(run, plan, name, gateway, gateway_port, join)
        return
    run, process = serve_local(plan, progress=_progress, trust=trust)
    _after_ready(run, plan, name, gateway, gateway_port, join)
    if foreground:
        _stay_attached(run, process)


def _after_ready(run: RunInfo, plan: ServePlan, recipe: str, gateway: bool, port: int,
                 join: Path | None) -> None:
    print_summary(run)
    if gateway:
        _start_gateway(run, plan, recipe, port)
    elif join is not None:
        _join_gateway(run, plan, join)


def _start_gateway(run: RunInfo, plan: ServePlan, recipe: str, port: int) -> None:
    from sm121.gateway import registry
    from sm121.gateway.run_upstreams import spec_from_plan
    from sm121.launch.gateway import start_gateway

    url = f"http://127.0.0.1:{port}"
    upstreams = run.directory / registry.FILE_NAME
    registry.create(upstreams, url, [spec_from_plan(plan, run.run_id, run.base_url)])
    url = start_gateway(run, recipe, plan.profile, port, progress=_progress,
                        registry=upstreams)
    console.print(f"gateway (request policy, admission, metrics at {url}/metrics):\n"
                  f"  {url}/v1  (agents should use this URL)\n"
                  f"more engines behind it: sm121 serve ... --gateway-join {run.run_id}",
                  highlight=False)


def _gateway_registry(run_id: str) -> Path:
    """The upstreams file of RUN's gateway, checked before anything starts."""
    from sm121.gateway import registry

    run = control.resolve_run(run_id)
    path = run.directory / registry.FILE_NAME
    if not path.is_file() or control.effective_status(run) != "ready":
        raise Sm121Error(f"run {run.run_id} has no running gateway to join",
                         "start one with `sm121 serve NAME --gateway`, then join it")
    return path


def _join_gateway(run: RunInfo, plan: ServePlan, path: Path) -> None:
    from sm121.gateway import registry
    from sm121.gateway.run_upstreams import spec_from_plan

    registry.add(path, spec_from_plan(plan, run.run_id, run.base_url))
    url = registry.gateway_url(path) or "the gateway"
    console.print(f"joined {url}: it routes {run.model} to this engine within a few seconds "
                  f"(check {url}/sm121/upstreams)", highlight=False)


def _progress(message: str) -> None:
    err_console.print(message, highlight=False)


def _stay_attached(run: RunInfo, process) -> None:  # type: ignore[no-untyped-def]
    err_console.print("foreground: Ctrl-C stops the engine")
    try:
        process.wait()
        err_console.print(f"[red]the engine exited with status {process.returncode}[/]")
        sys.exit(1)
    except KeyboardInterrupt:
        control.stop_run(run)
        err_console.print(f"stopped {run.run_id}")


def print_summary(run: RunInfo) -> None:
    t, boot = run.timings, run.boot
    console.print(f"[bold green]ready[/] {run.run_id}: {run.recipe} profile {run.profile}")
    console.print(f"  process start   {t.process_started_s:8.2f} s")
    console.print(f"  port open       {t.port_open_s:8.2f} s")
    console.print(f"  first generation{t.first_generation_s:8.2f} s")
    if boot.kv_pool_tokens is not None:
        console.print(f"  KV pool         {boot.kv_pool_tokens:,} tokens")
    if boot.max_concurrency is not None:
        console.print(f"  max concurrency {boot.max_concurrency:.2f}x at "
                      f"{boot.max_concurrency_at_tokens:,} tokens per request")
    body = shlex.quote(json.dumps({"model": run.model, "max_tokens": 16,
                                   "messages": [{"role": "user", "content": "Hello"}]}))
    console.print(f"\ncall it:\n  curl -s {run.base_url}/v1/chat/completions "
                  f"-H 'Content-Type: application/json' -d {body}", highlight=False, soft_wrap=True)
    console.print(f"stop it:\n  sm121 stop {run.run_id}", highlight=False)


def status(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """List runs: status (corrected by what is really running), URL and start-up times."""
    runs = list_runs()
    rows = [{**r.model_dump(mode="json"), "status": control.effective_status(r)} for r in runs]
    if as_json:
        print_json(rows)
        return
    if not rows:
        console.print("no runs")
        return
    table = Table("run", "status", "url", "first generation", "KV pool")
    table.columns[0].overflow = "fold"
    for r, row in zip(runs, rows, strict=True):
        first = r.timings.first_generation_s
        table.add_row(r.run_id, row["status"], r.base_url, f"{first:.1f} s" if first else "-",
                      f"{r.boot.kv_pool_tokens:,}" if r.boot.kv_pool_tokens else "-")
    console.print(table)


def logs(
    run_id: str = typer.Argument(..., help="Run id (or a unique prefix)."),
    follow: bool = typer.Option(False, "--follow", "-f", help="Keep printing new lines."),
    node: str | None = typer.Option(None, "--node", help="Node of a multi-node run."),
) -> None:
    """Print the engine log of a run."""
    run = control.resolve_run(run_id)
    path = control.log_path(run, node)
    if not path.is_file():
        raise Sm121Error(f"no log at {path}", "the run may not have started")
    if not follow:
        sys.stdout.write(path.read_text(errors="replace"))
        return
    try:
        for chunk in control.follow(path, lambda: control.run_alive(run)):
            sys.stdout.write(chunk)
            sys.stdout.flush()
    except KeyboardInterrupt:
        pass


def stop(
    run_id: str | None = typer.Argument(None, help="Run id (or a unique prefix)."),
    all_runs: bool = typer.Option(False, "--all", help="Stop every running run."),
) -> None:
    """Stop a run (every node, by process group or container), or all of them."""
    if all_runs == (run_id is not None):
        raise Sm121Error("give a run id or --all", "see `sm121 status` for run ids")
    runs = control.active_runs() if all_runs else [control.resolve_run(run_id or "")]
    for run in runs:
        stubborn = control.stop_run(run)
        if stubborn:
            raise Sm121Error(f"{run.run_id}: could not stop {', '.join(stubborn)}",
                             "check the node by hand; its pid is in the run directory")
        console.print(f"stopped {run.run_id}")
    if not runs:
        console.print("nothing running")
