"""`locality` as a `Scenario`: its params, sample and summary models, and its report (the
summary recomputed from the samples, so the run's cached-count rule applies to any file)."""

from __future__ import annotations

from pathlib import Path

from sm121.bench.context import Context
from sm121.bench.report.format import markdown_table, md
from sm121.bench.result_models import ScenarioResults
from sm121.bench.scenario import Params, Results, Scenario
from sm121.bench.scenarios.locality.models import (
    LocalityParams,
    LocalitySample,
    LocalitySettings,
    LocalitySummary,
)
from sm121.bench.scenarios.locality.run import locality
from sm121.bench.scenarios.locality.summary import console, summarize_locality, usage_reported

COLUMNS = ("turn", "ttft_s", "prompt_tokens", "cached_tokens", "reuse_usage", "reuse_metrics")


class Locality(Scenario[LocalitySample, LocalitySummary]):
    name = "locality"
    help = "Cost of a mutating field at clean/bottom/middle/top over several turns."
    params = LocalityParams
    sample = LocalitySample
    summary = LocalitySummary

    async def run(self, ctx: Context, params: Params) -> LocalitySummary:
        return await locality(ctx, LocalitySettings.model_validate(params.given()))

    def recompute(self, results: Results) -> Results:
        """The summary again from the samples: a turn with no cached count read by the run's
        rule (bench/cached.py), in files written before it too."""
        if isinstance(results, ScenarioResults) and results.samples:
            results.summary = summarize_locality(results.samples)
        return results

    def section(self, results: Results, files: list[Path]) -> list[str] | None:
        """A row per turn of each placement, as the summary reads it; a line where the
        engine reported no cached count (reuse from usage not measured, not 0)."""
        if not isinstance(results, ScenarioResults) or \
                not isinstance(results.summary, LocalitySummary):
            return None
        summary = results.summary
        rows = [[md(name), *(md(getattr(t, k, None)) for k in COLUMNS)]
                for name, turns in summary.placements.items() for t in turns]
        lines = markdown_table(["placement", *COLUMNS], rows)
        if rows and not usage_reported(summary):
            lines += ["- reuse from usage: not reported (no reply carried a cached count: "
                      "the engine does not send usage.prompt_tokens_details)", ""]
        return lines

    def console(self, summary: LocalitySummary) -> list[str]:
        return console(summary)
