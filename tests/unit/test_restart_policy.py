"""When a supervised engine may restart, and the backoff before it."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

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


def test_a_tiny_restart_window_is_refused_by_plan(tmp_path: Path) -> None:
    """`within_s: 0.001` made every earlier restart fall outside the window: unlimited
    restarts. The recipe is refused at load, naming the field and the floor."""
    from typer.testing import CliRunner

    from sm121.cli.main import app

    def plan(window: float) -> tuple[int, str]:
        recipe = tmp_path / f"r-{window:g}.yaml"
        recipe.write_text("name: tiny-window\nmodel: {id: tiny, source: tiny}\n"
                          f"restart: {{policy: on-failure, max: 3, within_s: {window}}}\n")
        result = CliRunner().invoke(app, ["plan", str(recipe)])
        return result.exit_code, f"{result.output}{result.exception or ''}"

    for window in (0.001, 1, 59.9):
        code, said = plan(window)
        assert code != 0 and "restart.within_s" in said and "at least 60 s" in said, said
    assert plan(60)[0] == 0
    with pytest.raises(ValidationError, match="unlimited"):
        RestartPolicy(within_s=5)
