"""An A/B's and a sweep's entries as their results files keep them, typed for the report:
one entry per measured run (a profile's repetition, or one N of a sweep) with its raw samples
(recomputed from, never trusted) and its headline metrics; a failed run has its error."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, JsonValue, field_validator

from sm121.bench.scenarios.agents.records import TurnSample, read_run
from sm121.bench.scenarios.agents.summary_model import RunMetrics


class RunEntry(BaseModel):
    model_config = ConfigDict(extra="allow")

    error: str | None = None
    samples: list[dict[str, Any]] = []  # the run's raw records (config, turns, background)
    metrics: RunMetrics | None = None

    @field_validator("metrics", mode="before")
    @classmethod
    def _no_metrics(cls, value: Any) -> Any:
        return value or None  # `{}`: not measured, as a missing key

    def bars(self) -> list[TurnSample]:
        return read_run(self.samples).bars


class StoredSummary(BaseModel):
    """What tune reads of a run's stored summary (the rest is kept, and recomputed)."""

    model_config = ConfigDict(extra="allow")

    wall_s: float | None = None


class AbEntry(RunEntry):
    """One repetition of one profile (bench ab, tune)."""

    profile: str
    rep: int
    run_id: str | None = None  # the boot it ran on
    boot_index: int | None = None  # which of the A/B's boots
    engine_args: dict[str, JsonValue] | None = None  # as served (any JSON an engine takes)
    summary: StoredSummary | None = None

    @field_validator("summary", mode="before")
    @classmethod
    def _no_summary(cls, value: Any) -> Any:
        return value or None  # `{}`: none stored, as a missing key


class SweepEntry(RunEntry):
    """One N of a sweep."""

    agents: int
