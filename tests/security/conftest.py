"""Fixtures the stranger-file tests share."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture
def no_boot(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Were a planted tune file to get past its check, the knee's boot would come next: made
    to fail at once (and be recorded), so a regression shows without booting an engine."""
    booted: list[str] = []

    def knee(*args: Any, **kwargs: Any) -> None:
        booted.append("knee")
        raise RuntimeError("the tune went on to boot the knee")

    monkeypatch.setattr("sm121.bench.tune.knee_step.knee_on_recipe", knee)
    return booted
