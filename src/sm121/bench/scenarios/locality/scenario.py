"""`locality` as a `Scenario`: its params, sample and summary models, and its report."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from sm121.bench.report.sections import rows_section
from sm121.bench.result_models import Number, Open
from sm121.bench.runner import Context
from sm121.bench.scenario import Params, Record, Scenario, option
from sm121.bench.scenarios.locality.run import locality


class LocalityParams(Params):
    turns: int = option(4, "--turns")
    base_words: int = option(1200, "--base-words", "Size of the first prompt.")


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


class Locality(Scenario[LocalitySample, LocalitySummary]):
    name = "locality"
    help = "Cost of a mutating field at clean/bottom/middle/top over several turns."
    params = LocalityParams
    sample = LocalitySample
    summary = LocalitySummary

    async def run(self, ctx: Context, params: Params) -> LocalitySummary:
        return LocalitySummary.model_validate(await locality(ctx, params.given()))

    def section(self, data: Record, files: list[Path]) -> list[str] | None:
        return rows_section(data, ("placement", "turn", "ttft_s", "prompt_tokens",
                                   "cached_tokens", "reuse_usage", "reuse_metrics"))
