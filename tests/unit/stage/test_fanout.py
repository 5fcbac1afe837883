"""The stage's fan-out: every node gets a copy, the source sends at most two over the network,
and nodes that received one serve the rest."""

from __future__ import annotations

import threading
import time

import pytest

from sm121.stage.fanout import fan_out


def run(source: str, targets: list[str], fail: set[str] = frozenset(),  # type: ignore[assignment]
        ready: list[str] | None = None, together: int = 0
        ) -> tuple[list[tuple[str, str]], int]:
    """`together`: each copy waits (up to 5 s) until that many have been under way at once,
    so that copies the fan-out runs in parallel overlap however late the box starts their
    threads (a fixed 20 ms copy did not overlap in a fresh-clone `make test`: peak 2)."""
    sends: list[tuple[str, str]] = []
    lock = threading.Condition()
    busy: dict[str, int] = {}
    peak = [0]

    def send(sender: str, target: str) -> None:
        with lock:
            sends.append((sender, target))
            busy[sender] = busy.get(sender, 0) + 1
            peak[0] = max(peak[0], sum(busy.values()))
            lock.notify_all()
            if together:
                lock.wait_for(lambda: peak[0] >= together, timeout=5)
        time.sleep(0.02)
        with lock:
            busy[sender] -= 1
        if target in fail:
            raise RuntimeError("boom")

    copies = fan_out(source, targets, send, ready=ready)
    assert sorted(c.target for c in copies) == sorted(targets)
    return sends, peak[0]


@pytest.mark.parametrize("count", [2, 3, 4, 8])
def test_the_head_sends_at_most_two_copies(count: int) -> None:
    nodes = [f"n{i}" for i in range(1, count + 1)]
    sends, _ = run("n1", nodes)
    network = [s for s in sends if s[0] == "n1" and s[1] != "n1"]
    assert len(network) == min(2, count - 1)
    assert ("n1", "n1") in sends  # its own local copy
    assert {t for _, t in sends} == set(nodes)
    # every sender other than the head had received its copy before it sent
    received = [t for _, t in sends]
    for sender, target in sends:
        if sender != "n1":
            assert received.index(sender) < received.index(target)


def test_copies_run_in_parallel() -> None:
    _, peak = run("n1", [f"n{i}" for i in range(1, 5)], together=3)
    assert peak >= 3  # the head's own copy and two network copies at once


def test_a_failed_copy_does_not_count_and_its_node_never_serves() -> None:
    sends, _ = run("n1", ["n2", "n3", "n4"], fail={"n2"})
    assert all(s != "n2" for s, _ in sends)
    assert ("n1", "n2") in sends and any(t == "n4" for _, t in sends)


def test_nodes_already_staged_serve_from_the_start() -> None:
    sends, _ = run("n1", ["n3", "n4"], ready=["n2"])
    assert ("n2", "n3") in sends
