"""`retrieval` as a `Scenario`: its params, sample and summary models, and its report."""

from __future__ import annotations

from pathlib import Path

from sm121.bench.context import Context
from sm121.bench.report.sections import rows_section
from sm121.bench.scenario import Params, Results, Scenario
from sm121.bench.scenarios.retrieval.models import (
    RetrievalParams,
    RetrievalSample,
    RetrievalSettings,
    RetrievalSummary,
)
from sm121.bench.scenarios.retrieval.run import retrieval


class Retrieval(Scenario[RetrievalSample, RetrievalSummary]):
    name = "retrieval"
    help = "Needles at depths with distractor codes: found and distractors returned."
    params = RetrievalParams
    sample = RetrievalSample
    summary = RetrievalSummary
    needs_stream = False
    stream_option = True

    async def run(self, ctx: Context, params: Params) -> RetrievalSummary:
        return await retrieval(ctx, RetrievalSettings.model_validate(params.given()))

    def section(self, results: Results, files: list[Path]) -> list[str] | None:
        return rows_section(results, ("length", "depth", "prompt_tokens", "found",
                                   "distractors_returned"))
