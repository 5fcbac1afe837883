"""`overlap` as a `Scenario`: its params, sample and summary models, A/B headline, recompute
and report."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field

from sm121.bench.result_models import Number, Open
from sm121.bench.runner import Context
from sm121.bench.scenario import Params, Record, Scenario, option
from sm121.bench.scenarios.overlap.metrics import HEADLINE, flatten_last_valid
from sm121.bench.scenarios.overlap.report import overlap_plots, overlap_section, recompute_overlap
from sm121.bench.scenarios.overlap.run import overlap


class OverlapParams(Params):
    prefill_tokens: int = option(32768, "--prefill-tokens",
                                 "Long prompt length, exact to the token.", short="-L")
    short_at: list[float] = option([0.25, 0.5], "--short-at", "Short requests at these "
                                   "fractions of the predicted prefill.")
    before_s: float = option(5.0, "--before", "Seconds of undisturbed baseline.")
    reps: int = option(1, "--reps", "Repetitions (median and spread).")


class OverlapSample(Open):
    """One repetition: the ongoing stream, the long prefill, the shorts (raw records, the
    evidence `overlap_metrics` recomputes from) and the metrics computed from them."""

    rep: int
    attempt: int = 0
    prefill_tokens: int | None = None
    before_s: Number | None = None
    idle_ttft_s: Number | None = None
    predicted: Record = Field(default_factory=dict)
    warmup: list[Any] = Field(default_factory=list)
    calibration: list[Any] = Field(default_factory=list)
    idle: list[Any] = Field(default_factory=list)
    long: Record = Field(default_factory=dict)
    shorts: list[Record] = Field(default_factory=list)
    counters: Record = Field(default_factory=dict)
    ongoing: Record = Field(default_factory=dict)
    metrics: Record = Field(default_factory=dict)


class OverlapSummary(Open):
    """`overlap_metrics.summarize_reps`: stats of every headline metric over valid reps."""

    reps: int = 0
    valid_reps: int = 0


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
        return OverlapSummary.model_validate(await overlap(ctx, params.given()))

    def flatten(self, samples: list[Record]) -> Record:
        return flatten_last_valid(samples)

    def recompute(self, data: Record) -> Record:
        return recompute_overlap(data)

    def plots(self, data: Record, out: Path, stem: str) -> list[Path]:
        return overlap_plots(data, out, stem)

    def section(self, data: Record, files: list[Path]) -> list[str] | None:
        return overlap_section(data, files)
