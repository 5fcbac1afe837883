"""The watchdog of one supervised cluster run: `python -m sm121.launch.cluster_watchdog RUN_ID`.

`serve` boots the run first, with the cluster launch's own rollback; then this process
watches it from the machine that launched it. A death is any node's engine process (or
container) gone, checked over SSH, or the head's /health failing N times in a row. A tensor-
parallel engine does not survive the loss of one rank, so a death rolls the whole run over:
every node is stopped (workers first), then started again in start order and waited for to
the first generation, as serve does. Each death is recorded with the node, its cause and the
last lines of its log; restarts follow the recipe's policy and backoff, then the run is
marked failed. SIGTERM (from `sm121 stop`) makes it exit; stop then stops the nodes."""

from __future__ import annotations

import sys
import time

from sm121.engines.adapter import EngineAdapter
from sm121.errors import Sm121Error
from sm121.hosts.parallel import in_parallel
from sm121.launch import control, remote
from sm121.launch.cluster_serve import ClusterLaunch
from sm121.launch.node_ops import recover_started
from sm121.launch.readiness import NotReady, health_ok
from sm121.launch.restarts import Restarts
from sm121.launch.watchdog_core import Death, WatchdogCore, stop_on_sigterm
from sm121.plan.model import ServePlan
from sm121.recipes.schema import RestartPolicy
from sm121.runs.state import NodeProcess, load_plan, load_run


class ClusterWatchdog(WatchdogCore):
    booted = True  # serve booted the run, with the cluster launch's own rollback

    def __init__(self, run_id: str) -> None:
        super().__init__(run_id)
        self.plan = ServePlan.model_validate(load_plan(load_run(run_id).directory))
        self.policy = self.plan.restart or RestartPolicy()
        self.engine_nodes = {n.name for n in self.plan.nodes}
        self.restarts = Restarts(run_id, self.policy, self.say)
        self.launch: ClusterLaunch | None = None  # while a restart is under way

    def announce(self) -> None:
        self.say(f"watching {len(self.engine_nodes)} node(s) of {self.run_id}")

    def boot(self) -> None:
        """After a death: a failed restart is a death during boot, the policy decides."""
        self.restart()

    def watch(self) -> None:
        failures = 0
        unreachable = UnreachableCount(self.policy.health_failures)
        while True:
            time.sleep(self.policy.health_interval_s)
            nodes = [n for n in load_run(self.run_id).nodes if n.name in self.engine_nodes]
            states = in_parallel(nodes, control.node_state)
            dead = [n for n, state in zip(nodes, states, strict=True) if state == "gone"]
            if dead:
                raise Death(", ".join(f"node {n.name}: its engine is gone" for n in dead),
                            "serving", dead=dead)
            lost = unreachable.after(nodes, states)
            if lost:
                raise Death(", ".join(f"node {n.name}: unreachable over ssh {unreachable.limit} "
                                      "checks in a row" for n in lost), "serving", dead=lost)
            failures = 0 if health_ok(self.plan.readiness.url) else failures + 1
            if failures >= self.policy.health_failures:
                raise Death(f"/health of the head failed {failures} times in a row",
                            "serving")

    def after_death(self, death: Death) -> bool:
        """Stop every engine node (the rollover: all ranks go), then record the crash; True
        when a restart is allowed."""
        run = load_run(self.run_id)
        cause, excerpt = _cause(death.dead or [n for n in run.nodes if n.role == "head"],
                               self.plan.adapter)
        self.say(f"death ({death.during}): {death.how}; cause: {cause}")
        stubborn = control.stop_nodes(run, self.engine_nodes)
        if stubborn:
            self.say(f"could not stop: {', '.join(stubborn)}")
        return self.restarts.after_death(death.during, death.how, cause, excerpt)

    def restart(self) -> None:
        """Every node again, in start order, to the first generation."""
        self.launch = ClusterLaunch(self.plan, self.say, run=load_run(self.run_id),
                                    restart=self.restarts.incarnation)
        try:
            self.launch.launch()
            self.launch.finish()
        except (NotReady, Sm121Error, OSError) as exc:
            in_parallel(self.launch.slots, recover_started)  # started, pid not yet recorded
            self.launch.save()
            dead = [s.process for s in self.launch.slots
                    if s.process.pgid is not None or s.process.container_id is not None]
            raise Death(f"not ready: {getattr(exc, 'message', exc)}", "boot", dead=dead) from exc
        finally:
            self.launch = None
        self.say(f"ready again (start {self.restarts.incarnation})")

    def on_stop(self) -> None:
        self.record_partial_start()

    def record_partial_start(self) -> None:
        """On SIGTERM during a restart: whatever was started goes into the run, for stop."""
        if self.launch is not None:
            in_parallel(self.launch.slots, recover_started)
            self.launch.save()


class UnreachableCount:
    """Checks in a row in which each node could not be reached over ssh. One failed ssh says
    nothing about the engine (on a loaded host an ssh to a loopback node took over 30 s), so
    it is not a death; a node unreachable for `limit` checks in a row (the policy's
    health_failures, as for the head's /health) is lost: its engine may live, but it cannot
    be watched or stopped, and a rollover is the way back."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.counts: dict[str, int] = {}

    def after(self, nodes: list[NodeProcess], states: list[str]) -> list[NodeProcess]:
        """Count this check; the nodes that reached the limit."""
        for node, state in zip(nodes, states, strict=True):
            self.counts[node.name] = self.counts.get(node.name, 0) + 1 \
                if state == "unreachable" else 0
        return [n for n in nodes if self.counts[n.name] >= self.limit]


def _cause(nodes: list[NodeProcess], engine: EngineAdapter) -> tuple[str, list[str]]:
    """The first error line among the dead nodes' logs (named by node), and that log's end.
    A log without one (a kill -9 leaves none) says so instead of blaming its last line."""
    tails = [(node, remote.log_tail(node)) for node in nodes]
    for node, text in tails:
        if engine.has_error_line(text):
            cause, tail = engine.death_cause(text)
            return f"{node.name}: {cause}", tail
    if not tails:
        return "no node log could be read", []
    node, text = tails[0]
    return (f"{node.name}: no error in its log (a kill from outside, or the OOM killer)",
            engine.death_cause(text)[1])


def run(run_id: str) -> int:
    stop_on_sigterm()
    return ClusterWatchdog(run_id).run()


if __name__ == "__main__":
    sys.exit(run(sys.argv[1]))
