"""The watchdog of one supervised run: `python -m sm121.launch.watchdog RUN_ID`.

It owns the engine's life: it starts the engine (so it is the parent and sees the exit
status), waits for readiness (a first generation, as serve does), then watches. A death is
the engine exiting, its process group vanishing, or /health failing N times in a row (a hung
engine: its group is then stopped). Each death is recorded in the run with its cause and the
last log lines; the engine is restarted with backoff while the recipe's restart policy
allows, then the run is marked failed. SIGTERM (from `sm121 stop`) stops the engine it
started and exits without touching the run's status: stop owns that."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from sm121.hosts import processes
from sm121.launch import restart_policy, startup_history
from sm121.launch.local import LOG_NAME, engine_environment, local_argv, local_hooks
from sm121.launch.readiness import NotReady, health_ok, wait_ready
from sm121.launch.restarts import Restarts
from sm121.launch.startup_history import build_record, node_startup
from sm121.launch.watchdog_core import Death, WatchdogCore, stop_on_sigterm
from sm121.plan.model import ServePlan
from sm121.recipes.schema import RestartPolicy
from sm121.runs.state import RunInfo, load_plan, load_run, monotonic, now_iso, update_run


class Watchdog(WatchdogCore):
    def __init__(self, run_id: str) -> None:
        super().__init__(run_id)
        run = load_run(run_id)
        self.plan = ServePlan.model_validate(load_plan(run.directory))
        self.policy = self.plan.restart or RestartPolicy()
        self.node = self.plan.nodes[0]
        self.log_path = run.directory / LOG_NAME
        self.process: subprocess.Popen[bytes] | None = None
        self.identity = processes.Identity(None, None)
        self.log_offset = self.ready_offset = 0
        self.restarts = Restarts(run_id, self.policy, self.say)

    def boot(self) -> None:
        self.start()
        self.ready()

    def start(self) -> None:
        if self.restarts.incarnation:
            with open(self.log_path, "a") as log:
                log.write(f"\n----- sm121 watchdog: restart {self.restarts.incarnation} at "
                          f"{now_iso()} -----\n")
        # Causes and start-up phases come from this start's part of the log only.
        self.log_offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        self.started = monotonic()
        self.process = processes.spawn(local_argv(self.node), engine_environment(self.node),
                                       self.log_path)
        pid = self.process.pid
        # What `stop` checks before it signals this engine's group (and what the watchdog does).
        self.identity = processes.identity(pid)
        Path(self.log_path.with_name("engine.pid")).write_text(f"{pid}\n")
        mark = self.identity

        def started(run: RunInfo) -> None:
            run.nodes[0].pid = run.nodes[0].pgid = pid
            run.nodes[0].boot_id, run.nodes[0].start_time = mark.boot_id, mark.start_time
            run.status = "restarting" if self.restarts.incarnation else "starting"
            run.timings.process_started_s = round(monotonic() - self.started, 2)
            run.timings.port_open_s = run.timings.first_generation_s = None

        update_run(self.run_id, started)
        self.say(f"engine started (pid {pid}, start {self.restarts.incarnation})")

    def ready(self) -> None:
        assert self.process is not None
        process = self.process
        try:
            result = wait_ready(self.plan.readiness, self.started,
                                alive=lambda: process.poll() is None, on_phase=self.say)
        except NotReady as exc:
            exited = process.poll() is not None
            processes.stop_group(process.pid, self.identity)
            code = process.wait()
            how = restart_policy.describe_exit(code)
            raise Death(f"not ready: {exc}; " + (how if exited else f"stopped by the watchdog "
                                                 f"({how})"), "boot", code) from exc
        self.ready_offset = self.log_path.stat().st_size
        run = update_run(self.run_id, lambda r: self._ready(r, result.port_open_s,
                                                            result.first_generation_s))
        hooks = local_hooks(self.plan, run, "after_ready", self.say)
        self._record_startup(run, [h.render() for h in hooks])
        self.say(f"ready: first generation after {result.first_generation_s:.1f} s")

    def _ready(self, run: RunInfo, port_open_s: float, first_s: float) -> None:
        run.timings.port_open_s = round(port_open_s, 2)
        run.timings.first_generation_s = round(first_s, 2)
        run.boot = self.plan.adapter.parse_boot_log_file(self.log_path)
        run.status = "ready"

    def _record_startup(self, run: RunInfo, hooks: list[str]) -> None:
        node = node_startup(run.nodes[0].name, "head", self._log_text(), run.timings.hooks_s,
                            run.timings.process_started_s, self.plan.adapter)
        record = build_record(run, [node], hooks, self.plan.adapter).model_copy(
            update={"restart": self.restarts.incarnation})
        startup_history.record(run, record)

    def watch(self) -> None:
        """Until the engine dies: exit, group gone, or /health failing N times in a row."""
        assert self.process is not None
        failures = 0
        while True:
            time.sleep(self.policy.health_interval_s)
            code = self.process.poll()
            if code is not None or not processes.group_alive(self.process.pid):
                if code is None:
                    code = exit_status_of_gone_leader(self.process)
                processes.stop_group(self.process.pid, self.identity)  # leftovers of the group
                raise Death(restart_policy.describe_exit(code), "serving", code)
            failures = 0 if health_ok(self.plan.readiness.url) else failures + 1
            if failures >= self.policy.health_failures:
                processes.stop_group(self.process.pid, self.identity)
                code = self.process.wait(timeout=30)
                raise Death(f"/health failed {failures} times in a row (stopped: "
                            f"{restart_policy.describe_exit(code)})", "serving", code)

    def _log_text(self, since: int | None = None) -> str:
        with open(self.log_path, "rb") as log:
            log.seek(self.log_offset if since is None else since)
            return log.read().decode(errors="replace")

    def _cause(self, death: Death) -> tuple[str, list[str]]:
        """The telling line of this start's log: a death while serving looks only at what
        was logged since readiness, so a boot warning is never blamed for a kill."""
        text = self._log_text(self.ready_offset if death.during == "serving" else None)
        engine = self.plan.adapter
        cause, _ = engine.death_cause(text)
        tail = engine.death_cause(self._log_text())[1]  # the excerpt: the end of this start's log
        if not engine.has_error_line(text):
            outside = " (a kill from outside, or the OOM killer)" if (death.exit_code or 0) < 0 \
                else ""
            cause = f"no error in the engine log{outside}"
        return cause, tail

    def after_death(self, death: Death) -> bool:
        """Record the crash; restart (True) or give up and mark the run failed (False)."""
        cause, tail = self._cause(death)
        self.say(f"engine died ({death.during}): {death.how}; cause: {cause}")
        return self.restarts.after_death(death.during, death.how, cause, tail, death.exit_code)

    def cleanup(self) -> None:
        """Stop the engine this watchdog started (a stop, a give-up, or a bug)."""
        if self.process is not None and self.process.poll() is None:
            processes.stop_group(self.process.pid, self.identity)


def exit_status_of_gone_leader(process: subprocess.Popen[bytes]) -> int | None:
    """The exit status of a leader whose group is gone. The leader is this watchdog's child,
    so its status is there to collect; a poll() a moment before the group check can miss it
    (a fresh-clone make test recorded a kill -9 as "exit status unknown" that way)."""
    try:
        return process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        return None


def run(run_id: str) -> int:
    stop_on_sigterm()
    return Watchdog(run_id).run()


if __name__ == "__main__":
    sys.exit(run(sys.argv[1]))
