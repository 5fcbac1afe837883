"""One node of a cluster launch: reach it, prepare its run directory, start its engine, and
tell why it failed. The sequencing across nodes lives in cluster_serve."""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass
from pathlib import Path

from sm121 import paths
from sm121.engines.adapter import EngineAdapter
from sm121.errors import Sm121Error
from sm121.hosts.parallel import in_parallel
from sm121.hosts.transport import Transport, node_home, transport_for
from sm121.launch import remote, runtimes
from sm121.launch.runtimes import NodeFiles
from sm121.plan.model import NodePlan
from sm121.runs.state import NodeProcess, RunInfo, through_transport


@dataclass
class NodeSlot:
    """A node during a launch: its plan, how to reach it, and its process once started."""

    plan: NodePlan
    transport: Transport
    home: str
    files: NodeFiles
    process: NodeProcess
    hooks_s: float | None = None
    started_s: float | None = None

    @property
    def label(self) -> str:
        return f"{self.plan.name} ({self.plan.role}, rank {self.plan.rank})"


def prepare_slot(node: NodePlan, run_id: str) -> NodeSlot:
    """Reach the node and learn its home (for `~` in paths), before anything is started."""
    transport = transport_for(node.ssh, node.ssh_port, node.ssh_config, name=node.name)
    home = node.home or node_home(transport, node.name, local=node.ssh is None)
    state_dir = str(paths.home()) if node.ssh is None else node.state_dir
    files = runtimes.node_files(state_dir, home, run_id, node.name)
    # Hooks run before the engine and may write here (the run id is new: nothing to clash).
    made = transport.run(["sh", "-c", 'umask 077; mkdir -p "$1"', "mkdir", files.run_dir])
    if not made.ok:
        raise Sm121Error(f"{node.name}: cannot create {files.run_dir}: {made.stderr.strip()}",
                         "set the cluster's state_dir to a writable folder on every node")
    process = NodeProcess(name=node.name, ssh=node.ssh, log=files.log, pid_file=files.pid_file,
                          container=node.container, ssh_port=node.ssh_port,
                          ssh_config=node.ssh_config, role=node.role)
    return NodeSlot(plan=node, transport=transport, home=home, files=files, process=process)


def start_slot(slot: NodeSlot) -> None:
    """Start the node's engine; fills in its pid (native) or container. Raises on failure."""
    node = slot.plan
    stdin = runtimes.secret_input(node)
    refs = runtimes.sent_refs(node)
    argv = runtimes.resolved_argv(node, slot.home)
    if node.runtime == "docker":
        script = runtimes.docker_start_script(argv, node.container or "", slot.files,
                                              bool(stdin), refs)
    else:
        script = runtimes.native_start_script(argv, node.env, slot.files, bool(stdin), refs)
    result = slot.transport.run(["sh", "-c", script], input=stdin, timeout=300)
    if not result.ok:
        raise Sm121Error(f"{slot.label} did not start: {result.stderr.strip()[-500:]}",
                         "fix the cause above; nothing is left running")
    record_started(slot.process, node.runtime, result.stdout)


def record_started(process: NodeProcess, runtime: str, stdout: str) -> None:
    """What the start script printed: the container id, or pid, boot id and start time."""
    last = (stdout.strip().splitlines() or [""])[-1].split()
    if runtime == "docker":
        process.container_id = last[0] if last else None
        return
    if not last or not last[0].isdigit():
        raise Sm121Error(f"{process.name}: the start script printed no pid ({stdout[-200:]!r})",
                         "see the node's engine log")
    process.pid = process.pgid = int(last[0])
    process.boot_id, process.start_time = (last[1], last[2]) if len(last) == 3 else (None, None)


def recover_started(slot: NodeSlot) -> None:
    """For a rollback: what the start script left in the node's run folder (pid, container
    id) when the launcher never learned it. Best effort: an unreachable node stays unknown."""
    process, files = slot.process, slot.files
    if process.pgid is not None or process.container_id is not None:
        return
    script = (runtimes.started_docker_script(files) if slot.plan.runtime == "docker"
              else runtimes.started_native_script(files))
    try:
        result = slot.transport.run_shell(script, timeout=30)
    except Sm121Error:
        return
    if result.ok and result.stdout.strip():
        with contextlib.suppress(Sm121Error, ValueError):
            record_started(process, slot.plan.runtime, result.stdout)


def why_dead(slot: NodeSlot, engine: EngineAdapter) -> str:
    """The most telling line of a node's log (read by the plan's `engine`), for a report
    that names node and cause."""
    text = remote.log_tail(slot.process)
    cause, _ = engine.death_cause(text)
    return cause


def save_local_log(run: RunInfo, slot: NodeSlot) -> str:
    """Copy the node's log next to the run (a local node's log is already here)."""
    if slot.plan.ssh is None and slot.plan.runtime == "native":
        return Path(slot.files.log).read_text(errors="replace")
    try:
        return remote.fetch_log(run, slot.process).read_text(errors="replace")
    except Sm121Error:
        return ""


class Liveness:
    """`alive` for the readiness loop: every node checked, at most every few seconds, since
    each check is a command over ssh and the loop polls twice a second."""

    def __init__(self, slots: list[NodeSlot], every_s: float = 3.0) -> None:
        self.slots, self.every_s = slots, every_s
        self.checked = 0.0
        self.dead: list[NodeSlot] = []

    def __call__(self) -> bool:
        if time.monotonic() - self.checked < self.every_s:
            return True
        self.checked = time.monotonic()
        # Only a node whose check ran and found its engine gone is dead: an unreachable node
        # is waited for (the readiness deadline bounds the wait), since a false death rolls
        # the whole cluster back (a loaded ssh once did so in make test's bench ab --cluster).
        states = in_parallel(self.slots, lambda s: remote.node_state(s.process)
                             if through_transport(s.process)
                             else ("alive" if _local_alive(s) else "gone"))
        self.dead = [s for s, state in zip(self.slots, states, strict=True) if state == "gone"]
        return not self.dead


def _local_alive(slot: NodeSlot) -> bool:
    from sm121.hosts import processes

    process = slot.process
    return process.pgid is not None and processes.group_alive_as(process.pgid, process.identity)


