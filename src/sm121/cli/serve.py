"""`sm121 serve`, `status`, `logs`, `stop` and `model tiny`."""

from __future__ import annotations

import json
import shlex
import sys

import typer
from rich.table import Table

from sm121.cli.options import CLUSTER, HOST, PORT, PROFILE, SET, TRUST
from sm121.cli.output import console, err_console, parse_sets, print_json
from sm121.cli.plan import print_plan
from sm121.cli.progress import LongWait
from sm121.errors import Sm121Error
from sm121.launch import control
from sm121.launch.local import serve_local
from sm121.launch.run_state import RunInfo, list_runs
from sm121.plan.build import build_plan
from sm121.plan.model import ServePlan
from sm121.plan.trust import require_trust


def register(app: typer.Typer) -> None:
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
    trust: bool = TRUST,
    gateway: bool = typer.Option(False, "--gateway", help="Also start `sm121 gateway` in front "
                                 "of the engine, with the recipe's request policy."),
    gateway_port: int = typer.Option(8100, "--gateway-port", help="Port of the gateway."),
    supervise: bool = typer.Option(False, "--supervise", help="A watchdog restarts the engine "
                                   "when it dies (default policy: on-failure, at most 3 "
                                   "restarts within 600 s); a recipe's `restart:` does the "
                                   "same."),
) -> None:
    """Start the engine and return once it has generated: readiness is a real completion with
    its token count checked, not an open port. The engine keeps running (see `sm121 status`)
    unless --foreground is given."""
    plan = build_plan(name, profile, cluster, parse_sets(sets), port, host)
    if supervise:
        from sm121.recipes.schema import RestartPolicy

        plan = plan.model_copy(update={"restart": plan.restart or RestartPolicy()})
    if timeout is not None:
        plan = plan.model_copy(update={"readiness": plan.readiness.model_copy(
            update={"timeout_s": timeout})})
    if dry_run:
        require_trust(plan.recipe, plan.needs_trust, trust)
        print_plan(plan)
        return
    for finding in plan.findings:
        err_console.print(f"[yellow]{finding.render()}[/]", highlight=False)
    if plan.restart is not None and plan.restart.policy != "never":
        from sm121.cli.supervise import serve_supervised_cli

        serve_supervised_cli(plan, cluster, trust, foreground,
                             (name, plan, gateway_port) if gateway else None)
        return
    if cluster:
        from sm121.launch.cluster_serve import serve_cluster  # multi-node over SSH

        with LongWait(f"serving {name} on {len(plan.nodes)} node(s)") as wait:
            run = serve_cluster(plan, progress=wait.say, trust=trust)
        print_summary(run)
        if gateway:
            _start_gateway(run, name, plan, gateway_port)
        return
    with LongWait(f"serving {name}: boot until the first generation") as wait:
        run, process = serve_local(plan, progress=wait.say, trust=trust)
    print_summary(run)
    if gateway:
        _start_gateway(run, name, plan, gateway_port)
    if foreground:
        _stay_attached(run, process)


def _start_gateway(run: RunInfo, recipe: str, plan: ServePlan, port: int) -> None:
    from sm121.launch.gateway import start_gateway

    seqs = plan.engine_args.get("max-num-seqs")  # as served: --set included
    with LongWait("gateway") as wait:
        url = start_gateway(run, recipe, plan.profile, port, progress=wait.say,
                            max_inflight=seqs if isinstance(seqs, int) else None)
    console.print(f"gateway (request policy, admission, metrics at {url}/metrics):\n"
                  f"  {url}/v1  (agents should use this URL)", highlight=False)


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
    table = Table("run", "status", "url", "first generation", "KV pool", "restarts",
                  "last crash")
    table.columns[0].overflow = "fold"
    for r, row in zip(runs, rows, strict=True):
        first = r.timings.first_generation_s
        last = r.crashes[-1] if r.crashes else None
        table.add_row(r.run_id, row["status"], r.base_url, f"{first:.1f} s" if first else "-",
                      f"{r.boot.kv_pool_tokens:,}" if r.boot.kv_pool_tokens else "-",
                      str(r.restarts) if r.watchdog_pid else "-",
                      f"{last.at[11:19]} {last.how}"[:60] if last else "-")
    console.print(table)


def logs(
    run_id: str = typer.Argument(..., help="Run id (or a unique prefix)."),
    follow: bool = typer.Option(False, "--follow", "-f", help="Keep printing new lines."),
    node: str | None = typer.Option(None, "--node", help="Node of a multi-node run."),
    crash: bool = typer.Option(False, "--crash", help="Each crash of a supervised run: when, "
                               "how, the cause and the log lines before it."),
) -> None:
    """Print the engine log of a run."""
    run = control.resolve_run(run_id)
    if crash:
        from sm121.cli.supervise import print_crashes

        print_crashes(run)
        return
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
        if run.status == "stopped":  # its ids may belong to other processes by now
            console.print(f"{run.run_id} was already stopped")
            continue
        stubborn = control.stop_run(run)
        if stubborn:
            raise Sm121Error(f"{run.run_id}: could not stop {', '.join(stubborn)}",
                             "check the node by hand; its pid is in the run directory")
        console.print(f"stopped {run.run_id}")
    if not runs:
        console.print("nothing running")
