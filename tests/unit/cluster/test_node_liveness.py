"""Readiness asks whether a cluster's nodes still run between polls. An ssh that cannot
connect says nothing about the engine: counting it as a death rolled back a booting
two-node `bench ab --cluster` in a fresh-clone `make test` on the loaded testbed (the rollback
then found every node still running). Here a real ssh to a closed loopback port stands for
the unreachable node."""

from __future__ import annotations

from types import SimpleNamespace

from support import free_port

from sm121.launch import remote
from sm121.launch.node_ops import Liveness
from sm121.runs.state import NodeProcess


def _node(**fields: object) -> NodeProcess:
    return NodeProcess.model_validate({"name": "node-b", "log": "engine.log",
                                       "pid_file": "engine.pid", **fields})


def test_an_unreachable_node_is_waited_for_not_counted_dead() -> None:
    node = _node(ssh="127.0.0.1", ssh_port=free_port(), pgid=4242, boot_id="b", start_time="1")
    assert remote.node_state(node) == "unreachable"
    assert remote.node_alive(node) is False  # status and stop still treat it as not running
    liveness = Liveness([SimpleNamespace(process=node)], every_s=0)  # type: ignore[list-item]
    assert liveness() is True and liveness.dead == []


def test_a_node_whose_engine_is_gone_is_dead() -> None:
    slot = SimpleNamespace(process=_node(ssh=None, pgid=None))
    liveness = Liveness([slot], every_s=0)  # type: ignore[list-item]
    assert liveness() is False and liveness.dead == [slot]


def test_the_watchdog_counts_a_node_lost_only_after_unreachable_checks_in_a_row() -> None:
    """The cluster watchdog read an unreachable node as a dead engine and rolled the whole
    run over; now it takes the policy's health_failures checks in a row, as the head's /health
    does, and a reachable check in between starts the count again."""
    from sm121.launch.cluster_watchdog import UnreachableCount
    from sm121.launch.control import node_state

    node = _node(ssh="127.0.0.1", ssh_port=free_port(), pgid=4242, boot_id="b", start_time="1")
    assert node_state(node) == "unreachable"
    count = UnreachableCount(3)
    assert count.after([node], ["unreachable"]) == []
    assert count.after([node], ["unreachable"]) == []
    assert count.after([node], ["alive"]) == []
    assert count.after([node], ["unreachable"]) == []
    assert count.after([node], ["unreachable"]) == []
    assert count.after([node], ["unreachable"]) == [node]
    assert node_state(_node(ssh=None, pgid=None)) == "gone"
