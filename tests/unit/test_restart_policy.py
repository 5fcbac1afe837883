"""When a supervised engine may restart, and the backoff before it."""

from __future__ import annotations

from sm121.launch.restart_policy import backoff_s, describe_exit, may_restart
from sm121.recipes.schema import RestartPolicy

POLICY = RestartPolicy(max=3, within_s=600)


def test_at_most_max_restarts_within_the_window() -> None:
    assert may_restart([], 0.0, POLICY)
    assert may_restart([10.0, 20.0], 30.0, POLICY)
    assert not may_restart([10.0, 20.0, 30.0], 40.0, POLICY)
    # Old restarts leave the window: an engine that served for an hour may restart again.
    assert may_restart([10.0, 20.0, 30.0], 700.0, POLICY)
    assert not may_restart([], 0.0, RestartPolicy(policy="never"))


def test_backoff_doubles_in_a_crash_loop_and_resets_after_a_quiet_window() -> None:
    assert [backoff_s([1.0] * n, 2.0, POLICY) for n in range(4)] == [1, 2, 4, 8]
    assert backoff_s([1.0] * 10, 2.0, POLICY) == 30
    assert backoff_s([1.0, 2.0], 5000.0, POLICY) == 1


def test_exit_descriptions() -> None:
    assert describe_exit(-9) == "killed by signal 9"
    assert describe_exit(3) == "exited with status 3"
    assert "unknown" in describe_exit(None)
