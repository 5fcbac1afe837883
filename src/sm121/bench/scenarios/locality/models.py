"""What `locality` records: one sample per turn of each placement, and its summary (per
placement, each turn against the clean run's); and what a run takes."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from sm121.bench.result_models import Number, Open
from sm121.bench.scenario import Params, option


class LocalityParams(Params):
    turns: int = option(4, "--turns")
    base_words: int = option(1200, "--base-words", "Size of the first prompt.")


class LocalitySettings(LocalityParams):
    """Everything a run uses: the command's params and the knobs only `--param` reaches."""

    placements: list[str] = ["clean", "bottom", "middle", "top"]
    append_words: int = 60
    max_tokens: int = 8


class LocalityReading(Open):
    """What one turn measured: its TTFT and how much of its prompt came from the cache."""

    turn: int
    ttft_s: Number | None = None
    prompt_tokens: int | None = None
    cached_tokens: int | None = None
    reuse_usage: Number | None = None
    reuse_metrics: Number | None = None


class LocalitySample(LocalityReading):
    """One turn of one placement of the mutating field."""

    placement: str
    request: dict[str, Any] = Field(default_factory=dict)  # the raw request record


class LocalityTurn(LocalityReading):
    """A turn in the summary: its reading against the clean run's same turn."""

    ratio_to_clean: Number | None = None


class LocalitySummary(Open):
    placements: dict[str, list[LocalityTurn]] = Field(default_factory=dict)
