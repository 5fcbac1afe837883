"""`locality` as a `Scenario`: its params, sample and summary models, and its report."""

from __future__ import annotations

from pathlib import Path

from sm121.bench.context import Context
from sm121.bench.report.sections import rows_section
from sm121.bench.scenario import Params, Results, Scenario
from sm121.bench.scenarios.locality.models import (
    LocalityParams,
    LocalitySample,
    LocalitySettings,
    LocalitySummary,
)
from sm121.bench.scenarios.locality.run import locality


class Locality(Scenario[LocalitySample, LocalitySummary]):
    name = "locality"
    help = "Cost of a mutating field at clean/bottom/middle/top over several turns."
    params = LocalityParams
    sample = LocalitySample
    summary = LocalitySummary

    async def run(self, ctx: Context, params: Params) -> LocalitySummary:
        return await locality(ctx, LocalitySettings.model_validate(params.given()))

    def section(self, results: Results, files: list[Path]) -> list[str] | None:
        return rows_section(results, ("placement", "turn", "ttft_s", "prompt_tokens",
                                   "cached_tokens", "reuse_usage", "reuse_metrics"))
