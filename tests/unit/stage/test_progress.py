"""The stage's progress board: bytes per node from each measure, a rate from two polls, the
ETA from what is left, and totals over the nodes."""

from __future__ import annotations

import time

import pytest

from sm121.stage.progress import ProgressBoard


def test_rate_and_eta_come_from_the_bytes_between_polls() -> None:
    there = {"spark2": 0, "spark3": 100}
    board = ProgressBoard(total_bytes=2000, report=lambda s: None)
    board.watch("spark2", "spark1", lambda: there["spark2"], 1000)
    board.watch("spark3", "spark1", lambda: there["spark3"], 1000)
    board.poll()
    time.sleep(0.2)
    there["spark2"], there["spark3"] = 400, 1200  # more than the total: counted as the total
    snap = board.poll()
    nodes = {n.node: n for n in snap.nodes}
    assert nodes["spark2"].done_bytes == 400 and nodes["spark3"].done_bytes == 1000
    rate = nodes["spark2"].rate_bps
    assert 0 < rate <= 2000.1  # 400 bytes in 0.2 s or a little more
    assert nodes["spark2"].eta_s == pytest.approx(600 / rate)
    assert snap.done_bytes == 1400 and snap.total_bytes == 2000
    board.finish("spark2")
    done = {n.node: n for n in board.snapshot().nodes}["spark2"]
    assert (done.done_bytes, done.rate_bps, done.eta_s) == (1000, 0.0, 0.0)


def test_a_node_not_measured_yet_has_no_eta() -> None:
    board = ProgressBoard(total_bytes=10, report=lambda s: None)
    board.watch("spark2", "spark1", lambda: 0, 10)
    (node,) = board.poll().nodes
    assert node.rate_bps == 0 and node.eta_s is None
