"""`retrieval` as a `Scenario`: its params, sample and summary models, and its report."""

from __future__ import annotations

from pathlib import Path

from sm121.bench.report.sections import rows_section
from sm121.bench.runner import Context
from sm121.bench.scenario import Params, Record, Scenario, option
from sm121.bench.scenarios.retrieval.models import RetrievalSample, RetrievalSummary
from sm121.bench.scenarios.retrieval.run import retrieval


class RetrievalParams(Params):
    lengths: list[int] = option([4096, 16384], "--lengths", "Context lengths (tokens).",
                                nonempty="4096,16384")
    depths: list[float] = option([0.08, 0.5, 0.92], "--depths")


class Retrieval(Scenario[RetrievalSample, RetrievalSummary]):
    name = "retrieval"
    help = "Needles at depths with distractor codes: found and distractors returned."
    params = RetrievalParams
    sample = RetrievalSample
    summary = RetrievalSummary
    needs_stream = False
    stream_option = True

    async def run(self, ctx: Context, params: Params) -> RetrievalSummary:
        return await retrieval(ctx, params.given())

    def section(self, data: Record, files: list[Path]) -> list[str] | None:
        return rows_section(data, ("length", "depth", "prompt_tokens", "found",
                                   "distractors_returned"))
