"""A started node, reached through its transport (ssh, or this machine for a docker node):
is it alive, stop it, fetch its log. Processes by group id, containers by name; never by a
name pattern."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from sm121.errors import Sm121Error
from sm121.hosts.transport import Transport, transport_for
from sm121.launch import runtimes
from sm121.runs.state import NodeProcess, RunInfo


def node_transport(node: NodeProcess) -> Transport:
    return transport_for(node.ssh, node.ssh_port, node.ssh_config, name=node.name)


# What a liveness check over the node's transport can say. "unreachable" is ssh itself failing
# (exit 255, or no answer within the timeout), which says nothing about the engine: on the
# loaded 2-core testbed an ssh to a loopback node once took over 30 s while engines booted.
NodeState = Literal["alive", "gone", "unreachable"]
SSH_FAILED = 255  # ssh's own exit status when it could not run the command


def node_state(node: NodeProcess) -> NodeState:
    if node.container is not None:
        script = runtimes.container_alive_script(node.container, node.container_id)
    elif node.pgid is not None:
        script = runtimes.group_alive_script(node.pgid, node.boot_id, node.start_time)
    else:
        return "gone"
    try:
        result = node_transport(node).run_shell(script, timeout=30)
    except Sm121Error:
        return "unreachable"
    answer = result.stdout.strip()
    if answer in ("alive", "gone"):
        return "alive" if answer == "alive" else "gone"
    return "unreachable" if result.returncode == SSH_FAILED or not answer else "gone"


def node_alive(node: NodeProcess) -> bool:
    # Unreachable counts as not alive here: status shows "exited", stop retries. Readiness
    # and the cluster watchdog ask node_state instead, so an ssh hiccup never rolls a booting
    # or serving cluster over.
    return node_state(node) == "alive"


def stop_node(node: NodeProcess, grace_s: float = 20.0) -> bool:
    """Stop the node's engine; True when nothing of it is left."""
    if node.container is not None:
        follower = str(Path(node.pid_file).with_name("logs.pid"))
        script = runtimes.container_stop_script(node.container, node.container_id, follower,
                                                int(grace_s) + 10)
    elif node.pgid is not None:
        script = runtimes.group_stop_script(node.pgid, node.boot_id, node.start_time, grace_s)
    else:
        return True
    try:
        result = node_transport(node).run_shell(script, timeout=grace_s + 60)
    except Sm121Error:
        return False
    return result.stdout.strip().endswith("gone")


def fetch_log(run: RunInfo, node: NodeProcess) -> Path:
    """Copy the node's engine log into the local run directory and return that copy."""
    local = run.directory / "nodes" / f"{node.name}.log"
    local.parent.mkdir(parents=True, exist_ok=True)
    result = node_transport(node).run(["cat", node.log], timeout=120)
    if not result.ok:
        raise Sm121Error(f"{node.name}: cannot read {node.log}: {result.stderr.strip()[-200:]}",
                         "the run may not have started on that node")
    local.write_text(result.stdout)
    return local


def log_tail(node: NodeProcess, lines: int = 200) -> str:
    """The end of a node's log, for the cause of a failure; empty when it cannot be read."""
    try:
        result = node_transport(node).run(["tail", "-n", str(lines), node.log], timeout=30)
    except Sm121Error:
        return ""
    return result.stdout if result.ok else ""

