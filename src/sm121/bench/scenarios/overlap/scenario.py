"""`overlap` as a `Scenario`: its params, sample and summary models, A/B headline, recompute
and report."""

from __future__ import annotations

from pathlib import Path

from sm121.bench.context import Context
from sm121.bench.scenario import Params, Results, Scenario
from sm121.bench.scenarios.overlap.metrics import HEADLINE, flatten_last_valid
from sm121.bench.scenarios.overlap.models import (
    OverlapHeadline,
    OverlapParams,
    OverlapSample,
    OverlapSettings,
    OverlapSummary,
)
from sm121.bench.scenarios.overlap.report import overlap_plots, overlap_section, recompute_overlap
from sm121.bench.scenarios.overlap.run import overlap


class Overlap(Scenario[OverlapSample, OverlapSummary]):
    name = "overlap"
    help = ("Interference and admission: one ongoing stream (its own baseline), a long "
            "prefill of exactly L tokens, short requests during it.")
    params = OverlapParams
    sample = OverlapSample
    summary = OverlapSummary
    headline = HEADLINE
    rep_stats = True

    async def run(self, ctx: Context, params: Params) -> OverlapSummary:
        return await overlap(ctx, OverlapSettings.model_validate(params.given()))

    def flatten(self, samples: list[OverlapSample]) -> OverlapHeadline | None:
        return flatten_last_valid(samples)

    def recompute(self, results: Results) -> Results:
        return recompute_overlap(results)

    def plots(self, results: Results, out: Path, stem: str) -> list[Path]:
        return overlap_plots(results, out, stem)

    def section(self, results: Results, files: list[Path]) -> list[str] | None:
        return overlap_section(results, files)
