"""Serve a plan on this machine: native runtime, own process group, run directory, readiness
to the first generation, and a clean stop on failure."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from string import Template

from sm121 import paths
from sm121.engines.adapter import EngineAdapter
from sm121.errors import Sm121Error
from sm121.hosts import processes
from sm121.hosts.python import this_python
from sm121.hosts.transport import LocalTransport
from sm121.launch import startup_history
from sm121.launch.hooks import HookResult, HookTarget, Phase, check_trust, run_hooks, weights_dir
from sm121.launch.readiness import NotReady, host_port, port_in_use, wait_ready
from sm121.launch.startup_history import build_record, node_startup
from sm121.models.tiny import generate_tiny_model
from sm121.models.tiny_gguf import write_tiny_gguf
from sm121.plan.model import NodePlan, ServePlan
from sm121.plan.trust import require_trust
from sm121.progress import Progress, quiet
from sm121.runs.state import (
    NodeProcess,
    RunInfo,
    create_run_dir,
    monotonic,
    new_run_id,
    now_iso,
    save_launch,
    wall_clock_now,
)
from sm121.stage.layout import plan_model_key

LOG_NAME = "engine.log"


def serve_local(plan: ServePlan, progress: Progress = quiet, trust: bool = False
                ) -> tuple[RunInfo, subprocess.Popen[bytes]]:
    """Start the engine and return once it generated. The caller owns the returned process
    (to wait on it in the foreground, or to let it run on)."""
    node = single_native_node(plan)
    preflight(plan, progress, trust)
    run = new_run(plan, node)
    started, run.timings.started_at = monotonic(), wall_clock_now()
    hook_results = local_hooks(plan, run, "before_serve", progress)
    run.timings.hooks_s = round(monotonic() - started, 2)
    progress(f"run {run.run_id}: starting {node.argv[0]} ...")
    process = processes.spawn(local_argv(node), engine_environment(node),
                              run.directory / LOG_NAME)
    mark = processes.identity(process.pid)
    try:
        run.nodes[0].pid = run.nodes[0].pgid = process.pid
        run.nodes[0].boot_id, run.nodes[0].start_time = mark.boot_id, mark.start_time
        (run.directory / "engine.pid").write_text(f"{process.pid}\n")
        run.timings.process_started_s = round(monotonic() - started, 2)
        run.save()
        result = wait_ready(plan.readiness, started,
                            alive=lambda: process.poll() is None, on_phase=progress)
        run.timings.port_open_s = round(result.port_open_s, 2)
        run.timings.first_generation_s = round(result.first_generation_s, 2)
        run.boot = plan.adapter.parse_boot_log_file(run.directory / LOG_NAME)
        hook_results += local_hooks(plan, run, "after_ready", progress)
        _record_startup(run, hook_results, plan.adapter)
        run.status = "ready"
        run.save()
    except BaseException as exc:  # Ctrl-C and bugs too: the engine must not be left running
        _fail(run, process, mark, exc, plan.adapter)
    return run, process


def preflight(plan: ServePlan, progress: Progress, trust: bool) -> None:
    """Refuse before anything starts: what a recipe from elsewhere asks to run without
    --trust, unknown hooks, a busy port. Make the tiny model when the plan serves it and it is
    not there yet."""
    require_trust(plan.recipe, plan.needs_trust, trust)
    check_trust(plan.hooks, trust, plan.recipe)
    prepare_model(plan, progress)
    host, port = host_port(plan.base_url)
    if port_in_use(host, port):
        raise Sm121Error(f"port {port} on {host} is already in use",
                         "stop what holds it (`sm121 status` lists sm121's runs) or pass --port N")


def engine_environment(node: NodePlan, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The launcher's environment, plus the node's values with ${VAR} expanded from it.
    Secrets (pass_env) are inherited as they are and never written to disk."""
    env = dict(os.environ if base is None else base)
    env.update({k: Template(v).safe_substitute(env) for k, v in node.env.items()})
    # sm121's own environment's bin/ last on the PATH, active or not: `make setup` links
    # llama-server there; a program on the PATH already still wins.
    own = str(Path(sys.executable).parent)
    if own not in env.get("PATH", "").split(os.pathsep):
        env["PATH"] = os.pathsep.join(p for p in (env.get("PATH"), own) if p)
    return env


def single_native_node(plan: ServePlan) -> NodePlan:
    if len(plan.nodes) != 1 or plan.nodes[0].ssh is not None:
        raise Sm121Error(f"{plan.recipe} runs on {len(plan.nodes)} nodes",
                         "serve it with --cluster FILE")
    node = plan.nodes[0]
    if node.runtime != "native":
        raise Sm121Error(f"{plan.recipe} uses the {node.runtime} runtime; local serving runs "
                         "the native runtime", "use --cluster FILE for the docker runtime")
    return node


def prepare_model(plan: ServePlan, progress: Progress) -> None:
    tiny = paths.models_dir() / "tiny"
    if Path(plan.model_ref) != tiny:
        return
    if not (tiny / "config.json").is_file():
        progress(f"generating the tiny model in {tiny} ...")
    generate_tiny_model(tiny)  # an existing one gets this version's chat template
    if plan.adapter.model_format == "gguf":
        write_tiny_gguf(tiny)  # the same model as one GGUF file, beside the folder's


def local_hooks(plan: ServePlan, run: RunInfo, phase: Phase, progress: Progress
                 ) -> list[HookResult]:
    """The recipe's hooks on this machine; a failed before_serve hook stops the serve."""
    node = plan.nodes[0]
    home = str(Path.home())
    repo, revision = plan_model_key(plan.recipe_spec)
    target = HookTarget(node=node, transport=LocalTransport(), run_dir=str(run.directory),
                        weights_dir=weights_dir(plan.model_ref, node, home), home=home,
                        model_repo=repo, revision=revision)
    results = run_hooks(phase, plan.hooks, target)
    for result in results:
        progress(result.render())
    failed = [r for r in results if r.status == "failed"]
    if failed and phase == "before_serve":
        run.status, run.failure = "failed", failed[0].render()
        run.save()
        raise Sm121Error(f"a before_serve hook failed, nothing was started: {failed[0].render()}",
                         "fix the cause, or remove the hook from the recipe")
    return results


def _record_startup(run: RunInfo, hooks: list[HookResult], engine: EngineAdapter) -> None:
    log = (run.directory / LOG_NAME).read_text(errors="replace")
    node = node_startup(run.nodes[0].name, "head", log, run.timings.hooks_s,
                        run.timings.process_started_s, engine)
    startup_history.record(run, build_record(run, [node], [h.render() for h in hooks], engine,
                                             log))


def local_argv(node: NodePlan) -> list[str]:
    return this_python(node.argv)


def new_run(plan: ServePlan, node: NodePlan) -> RunInfo:
    run_id = new_run_id(plan.recipe, plan.profile)
    folder = create_run_dir(run_id)
    save_launch(folder, plan, {node.name: local_argv(node)})
    run = RunInfo(
        run_id=run_id, recipe=plan.recipe, profile=plan.profile, created=now_iso(),
        base_url=plan.base_url, model=plan.readiness.model,
        nodes=[NodeProcess(name=node.name, log=str(folder / LOG_NAME),
                           pid_file=str(folder / "engine.pid"))],
    )
    run.save()
    return run


def _fail(run: RunInfo, process: subprocess.Popen[bytes], started: processes.Identity,
          exc: BaseException, engine: EngineAdapter) -> None:
    """Stop what is left, record why, and raise with the engine's own words."""
    processes.stop_group(process.pid, started)
    process.wait(timeout=10)
    log_text = (run.directory / LOG_NAME).read_text(errors="replace")
    cause, tail = engine.death_cause(log_text)
    interrupted = isinstance(exc, KeyboardInterrupt)
    run.status = "stopped" if interrupted else "failed"
    run.failure = "interrupted" if interrupted else f"{exc}; cause: {cause}"
    run.save()
    if not isinstance(exc, NotReady):
        raise exc  # stopped; the error as it came
    raise Sm121Error(
        f"the engine did not become ready: {exc}\n  cause: {cause}\n  last log lines:\n    "
        + "\n    ".join(tail[-15:]),
        f"full log: sm121 logs {run.run_id}",
    )
