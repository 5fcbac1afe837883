"""Serve a plan across nodes over SSH: hooks, the start order with its waits, readiness to
the first generation, start-up timing per node, and a rollback of every node when one fails.

One run id for all nodes; the run directory on this machine holds the plan, each node's argv
and env (without secrets), copies of the node logs and the timings. Each node keeps its own
log and pid file in its state directory, so `status`, `logs --node` and `stop` reach it."""

from __future__ import annotations

import time
from itertools import groupby

from sm121.engines.adapter import EngineAdapter
from sm121.errors import Sm121Error
from sm121.hosts.parallel import in_parallel
from sm121.launch import control, startup_history
from sm121.launch.hooks import HookResult, HookTarget, run_hooks, weights_dir
from sm121.launch.local import preflight
from sm121.launch.node_ops import (
    Liveness,
    NodeSlot,
    prepare_slot,
    recover_started,
    save_local_log,
    start_slot,
    why_dead,
)
from sm121.launch.readiness import NotReady, host_port, wait_ready
from sm121.launch.runtimes import resolved_argv
from sm121.launch.staged_weights import use_staged
from sm121.plan.model import ServePlan
from sm121.progress import Progress, quiet
from sm121.runs.state import (
    RunInfo,
    Timings,
    create_run_dir,
    monotonic,
    new_run_id,
    now_iso,
    save_launch,
    update_run,
    wall_clock_now,
)
from sm121.stage.layout import plan_model_key

# A process that dies at once (a missing interpreter, an unknown flag caught early) is caught
# here; later deaths are caught by the liveness checks while waiting for readiness.
SETTLE_S = 2.0


class ClusterLaunch:
    """One start of every node. `run` is given for a restart of a supervised run (the same
    run id and folder); `restart` then numbers the start in the start-up history."""

    def __init__(self, plan: ServePlan, progress: Progress, run: RunInfo | None = None,
                 restart: int = 0) -> None:
        self.plan, self.progress, self.restart = plan, progress, restart
        self.run = run if run is not None else _new_run(plan)
        self.slots: list[NodeSlot] = []
        self.hook_results: list[HookResult] = []
        self.started = monotonic()

    def launch(self) -> RunInfo:
        plan = self.plan
        self.progress(f"run {self.run.run_id}: {len(plan.nodes)} node(s)")
        self.slots = in_parallel(plan.nodes, lambda n: prepare_slot(n, self.run.run_id))
        in_parallel(self.slots, lambda s: use_staged(s, plan, self.progress))
        save_launch(self.run.directory, plan,  # argv as each node runs it; secrets by name only
                    {s.plan.name: resolved_argv(s.plan, s.home) for s in self.slots})
        self.save()
        self.started, self.run.timings.started_at = monotonic(), wall_clock_now()
        self._hooks_before()
        self._start_in_order()
        liveness = Liveness(self.slots)
        result = wait_ready(plan.readiness, self.started, alive=liveness,
                            on_phase=self.progress)
        self.run.timings.port_open_s = round(result.port_open_s, 2)
        self.run.timings.first_generation_s = round(result.first_generation_s, 2)
        return self.run

    def save(self) -> None:
        """What this launch owns (its engine nodes, timings, boot facts, status, failure),
        written into run.json as it is now, under update_run's lock: the watchdog, the restart
        record and the gateway launcher write the same file, and a whole-run save of this
        launch's copy dropped what they wrote in between (a gateway node `stop` must reach, a
        crash, the watchdog's pid). A restart keeps what runs beside the engine."""
        mine, started = self.run, [s.process for s in self.slots]
        names = {p.name for p in started} or {n.name for n in self.plan.nodes}

        def merge(fresh: RunInfo) -> None:
            fresh.nodes = started + [n for n in fresh.nodes if n.name not in names]
            fresh.timings, fresh.boot = mine.timings, mine.boot
            fresh.status, fresh.failure = mine.status, mine.failure

        self.run = update_run(mine.run_id, merge)

    def finish(self) -> None:
        """After the first generation: after_ready hooks, boot facts, the start-up record."""
        self.hook_results += self._hooks("after_ready")
        logs = in_parallel(self.slots, lambda s: save_local_log(self.run, s))
        self.run.boot = self.plan.adapter.parse_boot_log(logs[0])
        engine = self.plan.adapter
        nodes = [startup_history.node_startup(s.plan.name, s.plan.role, text, s.hooks_s,
                                              s.started_s, engine)
                 for s, text in zip(self.slots, logs, strict=True)]
        hook_lines = [h.render() for h in self.hook_results]
        record = startup_history.build_record(self.run, nodes, hook_lines, engine,
                                              logs[0]).model_copy(update={"restart": self.restart})
        startup_history.record(self.run, record)
        self.run.status = "ready"
        self.save()
        self.progress(f"ready ({record.start} start): first generation after "
                      f"{self.run.timings.first_generation_s:.1f} s")

    def _hooks_before(self) -> None:
        results = self._hooks("before_serve")
        self.hook_results += results
        self.run.timings.hooks_s = round(monotonic() - self.started, 2)
        failed = [r for r in results if r.status == "failed"]
        if failed:
            raise Sm121Error("a before_serve hook failed, nothing was started:\n  "
                             + "\n  ".join(r.render() for r in failed),
                             "fix the node (see the message), or remove the hook from the recipe")

    def _hooks(self, phase: str) -> list[HookResult]:
        names = (self.plan.hooks.before_serve if phase == "before_serve"
                 else self.plan.hooks.after_ready)
        if not names:
            return []

        def on_node(slot: NodeSlot) -> list[HookResult]:
            began = monotonic()
            repo, revision = plan_model_key(self.plan.recipe_spec)
            target = HookTarget(node=slot.plan, transport=slot.transport,
                                weights_dir=weights_dir(self.plan.model_ref, slot.plan, slot.home),
                                run_dir=slot.files.run_dir, home=slot.home, model_repo=repo,
                                revision=revision)
            results = run_hooks(phase, self.plan.hooks, target)  # type: ignore[arg-type]
            if phase == "before_serve":
                slot.hooks_s = round(monotonic() - began, 2)
            return results

        results = [r for per_node in in_parallel(self.slots, on_node) for r in per_node]
        for result in results:
            self.progress(result.render())
        return results

    def _start_in_order(self) -> None:
        ordered = sorted(self.slots, key=lambda s: s.plan.start_order)
        for order, group in groupby(ordered, key=lambda s: s.plan.start_order):
            members = list(group)
            self.progress(f"start {order + 1}: " + ", ".join(s.label for s in members))
            in_parallel(members, self._start_one)
            self.run.timings.process_started_s = round(monotonic() - self.started, 2)
            self.save()
            time.sleep(SETTLE_S)
            liveness = Liveness(members, every_s=0)
            if not liveness():
                raise NotReady(_deaths(liveness.dead, self.plan.adapter))

    def _start_one(self, slot: NodeSlot) -> None:
        start_slot(slot)
        slot.started_s = round(monotonic() - self.started, 2)
        self.save()  # from each thread of a start group: update_run's lock orders them


def serve_cluster(plan: ServePlan, progress: Progress = quiet,
                  trust: bool = False) -> RunInfo:
    """Start the plan on its nodes and return once the head generated. The engine keeps
    running; `sm121 stop RUN` stops every node."""
    preflight(plan, progress, trust)
    _warn_unreachable_probe(plan, progress)
    launch = ClusterLaunch(plan, progress)
    try:
        launch.launch()
        launch.finish()
    except BaseException as exc:  # Ctrl-C and bugs too: no node may be left running
        _roll_back(launch, exc)
    return launch.run


def _roll_back(launch: ClusterLaunch, exc: BaseException) -> None:
    """Stop every node that started, record why, and raise naming the node and its cause."""
    run = launch.run
    message = _why(launch, exc)
    launch.progress(f"rolling back {run.run_id} on every node ...")
    # A node may have started without its pid reaching this machine (the failure came in
    # between): its own files in the run's folder on the node say what was started.
    in_parallel(launch.slots, recover_started)
    launch.save()  # what recover_started found, so that stop_run sees it on disk too
    stubborn = control.stop_run(launch.run)
    interrupted = isinstance(exc, KeyboardInterrupt)
    launch.run.status = "stopped" if interrupted else "failed"
    launch.run.failure = message
    launch.save()
    run = launch.run
    if not isinstance(exc, Exception):
        raise exc  # Ctrl-C, SystemExit: after the rollback, as they came
    left = f"; could not stop {', '.join(stubborn)}" if stubborn else "; every node was stopped"
    raise Sm121Error(f"the cluster serve failed: {message}{left}",
                     f"node logs: sm121 logs {run.run_id} --node NAME") from exc


def _why(launch: ClusterLaunch, exc: BaseException) -> str:
    if isinstance(exc, NotReady):
        dead = Liveness(launch.slots, every_s=0)
        dead()
        return str(exc) if str(exc).startswith("node ") else (
            f"{exc}; " + (_deaths(dead.dead, launch.plan.adapter) if dead.dead
                          else "every node was still running"))
    if isinstance(exc, Sm121Error):
        return exc.message
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted"
    return f"{type(exc).__name__}: {exc}"


def _deaths(dead: list[NodeSlot], engine: EngineAdapter) -> str:
    return "; ".join(f"node {s.label} exited: {why_dead(s, engine)}" for s in dead)


def _warn_unreachable_probe(plan: ServePlan, progress: Progress) -> None:
    head = plan.head
    host, _ = host_port(plan.base_url)
    head_host = (head.ssh or "").split("@")[-1]
    if head.ssh and host.startswith("127.") and not head_host.startswith("127."):
        progress(f"note: the engine listens on {host} of {head.name}, which this machine cannot "
                 "reach; pass --host 0.0.0.0 (or the head's address) to serve the cluster")


def _new_run(plan: ServePlan) -> RunInfo:
    run_id = new_run_id(plan.recipe, plan.profile)
    create_run_dir(run_id)
    run = RunInfo(run_id=run_id, recipe=plan.recipe, profile=plan.profile, created=now_iso(),
                  base_url=plan.base_url, model=plan.readiness.model, timings=Timings())
    save_launch(run.directory, plan, {})  # the argv per node follows once homes are known
    run.save()
    return run
