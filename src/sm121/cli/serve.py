"""`sm121 serve`, `status`, `logs` and `stop`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import typer
from rich.table import Table

from sm121.cli.options import CLUSTER, HOST, PORT, PROFILE, SET, TRUST
from sm121.cli.output import console, err_console, parse_sets, print_json
from sm121.cli.plan import print_plan
from sm121.cli.progress import LongWait
from sm121.cli.serve_gateway import gateway_choice, print_gateway_plan
from sm121.cli.serve_ready import after_ready, gateway_registry
from sm121.display import escape, plain
from sm121.errors import Sm121Error
from sm121.launch import control
from sm121.launch.exposure import open_engine_warning
from sm121.plan.build import build_plan
from sm121.plan.model import ServePlan
from sm121.plan.trust import require_trust
from sm121.runs.state import RunInfo, list_runs
from sm121.serving.serve import Mode, mode_for
from sm121.serving.serve import serve as serve_plan
from sm121.serving.serve import supervise as supervised_plan


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
    gateway: bool | None = typer.Option(None, "--gateway/--no-gateway", help="Start `sm121 "
                                        "gateway` in front of the engine, with the recipe's "
                                        "request policy. Default: on when the policy strips "
                                        "or rejects parameters."),
    gateway_port: int = typer.Option(8100, "--gateway-port", help="Port of the gateway."),
    supervise: bool = typer.Option(False, "--supervise", help="A watchdog restarts the engine "
                                   "when it dies (default policy: on-failure, at most 3 "
                                   "restarts within 600 s); a recipe's `restart:` does the "
                                   "same."),
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
    join = gateway_registry(gateway_join) if gateway_join else None
    plan = build_plan(name, profile, cluster, parse_sets(sets), port, host)
    gateway, unguarded = gateway_choice(plan, gateway, join is not None)
    if supervise:
        plan = supervised_plan(plan)
    if timeout is not None:
        plan = plan.model_copy(update={"readiness": plan.readiness.model_copy(
            update={"timeout_s": timeout})})
    exposed = open_engine_warning(plan)
    if dry_run:
        require_trust(plan.recipe, plan.needs_trust, trust)
        print_plan(plan)
        print_gateway_plan(plan, gateway_port if gateway else None, unguarded)
        if exposed is not None:
            err_console.print(plain(exposed.render(), None, "yellow", keep_newlines=True))
        return
    for finding in [*plan.findings, *([exposed] if exposed else [])]:
        err_console.print(plain(finding.render(), None, "yellow", keep_newlines=True))
    if unguarded:
        err_console.print(plain(unguarded, None, "yellow", keep_newlines=True))
    mode = mode_for(plan, cluster is not None)
    with LongWait(_waiting_for(name, plan, mode)) as wait:
        run = serve_plan(plan, mode, progress=wait.progress, trust=trust)
    after_ready(run.info, plan, gateway_port if gateway else None, join)
    if run.supervised:
        from sm121.cli.supervise import print_supervised, stay_supervised

        print_supervised(plan)
        if foreground:
            stay_supervised(run.info)
    elif foreground and run.process is not None:
        _stay_attached(run.info, run.process)


def _waiting_for(name: str, plan: ServePlan, mode: Mode) -> str:
    if mode == "local":
        return f"serving {name}: boot until the first generation"
    if mode == "supervised":
        return f"serving {name} supervised: boot until the first generation"
    how = " supervised" if mode == "cluster-supervised" else ""
    return f"serving {name}{how} on {len(plan.nodes)} node(s)"


def _stay_attached(run: RunInfo, process: subprocess.Popen[bytes]) -> None:
    err_console.print("foreground: Ctrl-C stops the engine")
    try:
        process.wait()
        err_console.print(f"[red]the engine exited with status {process.returncode}[/]")
        sys.exit(1)
    except KeyboardInterrupt:
        control.stop_run(run)
        err_console.print(f"stopped {run.run_id}")


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
    raw: bool = typer.Option(False, "--raw", help="The log's bytes as the engine wrote them. "
                             "Without it, control characters other than newlines and tabs "
                             "(terminal escapes, bidi controls) are spelled out (\\x1b) and a "
                             "carriage return ends its line, to a terminal, a file or a pipe "
                             "alike: the log holds strangers' strings (prompts, model names), "
                             "and a pipe often ends in a terminal (| less -R, | tail)."),
) -> None:
    """Print the engine log of a run, its control characters spelled out (--raw: as written)."""
    run = control.resolve_run(run_id)
    if crash:
        from sm121.cli.supervise import print_crashes

        print_crashes(run)
        return
    path = control.log_path(run, node)
    if not path.is_file():
        raise Sm121Error(f"no log at {path}", "the run may not have started")
    if raw:
        _write_raw(path, run, follow)
        return
    # The log holds what the engine printed of requests and model files: its hidden
    # characters are spelled out (display.escape) wherever stdout goes. Read as text, a
    # carriage return is a line end (a progress bar's updates, a line it would overwrite).
    if not follow:
        sys.stdout.write(escape(path.read_text(errors="replace"), None, keep_newlines=True))
        return
    try:
        for chunk in control.follow(path, lambda: control.run_alive(run)):
            sys.stdout.write(escape(chunk, None, keep_newlines=True))
            sys.stdout.flush()
    except KeyboardInterrupt:
        pass


def _write_raw(path: Path, run: RunInfo, follow: bool) -> None:
    out = sys.stdout.buffer
    if not follow:
        out.write(path.read_bytes())
        out.flush()
        return
    try:
        for chunk in control.follow_bytes(path, lambda: control.run_alive(run)):
            out.write(chunk)
            out.flush()
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
