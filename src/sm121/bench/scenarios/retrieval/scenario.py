"""`retrieval` as a `Scenario`: its params, sample and summary models, and its report."""

from __future__ import annotations

from pathlib import Path

from sm121.bench.report.sections import rows_section
from sm121.bench.result_models import Number, Open
from sm121.bench.runner import Context
from sm121.bench.scenario import Params, Record, Scenario, option
from sm121.bench.scenarios.retrieval.run import retrieval


class RetrievalParams(Params):
    lengths: list[int] = option([4096, 16384], "--lengths", "Context lengths (tokens).",
                                nonempty="4096,16384")
    depths: list[float] = option([0.08, 0.5, 0.92], "--depths")


class RetrievalSample(Open):
    """One needle at one depth of one context length."""

    length: int
    depth: Number
    prompt_tokens: int | None = None
    ttft_s: Number | None = None
    code: str | None = None
    answer: str | None = None
    found: bool | None = None
    distractors_returned: list[str] = []  # the codes it answered instead


class RetrievalSummary(Open):
    found: int
    cases: int
    distractors_returned: int
    by_length: dict[str, int]


class Retrieval(Scenario[RetrievalSample, RetrievalSummary]):
    name = "retrieval"
    help = "Needles at depths with distractor codes: found and distractors returned."
    params = RetrievalParams
    sample = RetrievalSample
    summary = RetrievalSummary
    needs_stream = False
    stream_option = True

    async def run(self, ctx: Context, params: Params) -> RetrievalSummary:
        return RetrievalSummary.model_validate(await retrieval(ctx, params.given()))

    def section(self, data: Record, files: list[Path]) -> list[str] | None:
        return rows_section(data, ("length", "depth", "prompt_tokens", "found",
                                   "distractors_returned"))
