"""What `locality` records: one sample per turn of each placement, and its summary (per
placement, each turn against the clean run's)."""

from __future__ import annotations

from pydantic import Field

from sm121.bench.result_models import Number, Open
from sm121.bench.scenario import Record


class LocalitySample(Open):
    """One turn of one placement of the mutating field."""

    placement: str
    turn: int
    ttft_s: Number | None = None
    prompt_tokens: int | None = None
    cached_tokens: int | None = None
    reuse_usage: Number | None = None
    reuse_metrics: Number | None = None
    request: Record = Field(default_factory=dict)  # the raw request record


class LocalityTurn(Open):
    turn: int
    ttft_s: Number | None = None
    prompt_tokens: int | None = None
    cached_tokens: int | None = None
    reuse_usage: Number | None = None
    reuse_metrics: Number | None = None
    ratio_to_clean: Number | None = None


class LocalitySummary(Open):
    placements: dict[str, list[LocalityTurn]] = Field(default_factory=dict)
