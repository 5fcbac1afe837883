"""`decode-scaling` and `prefill-scaling` as `Scenario`s: one class each over a shared base
(the same samples, summary and report; their own size parameter and headline)."""

from __future__ import annotations

from pathlib import Path

from sm121.bench.context import Context
from sm121.bench.scenario import Params, Results, Scenario
from sm121.bench.scenarios.scaling.models import (
    DecodeScalingParams,
    DecodeScalingSettings,
    PrefillScalingParams,
    ScalingHeadline,
    ScalingSample,
    ScalingSummary,
)
from sm121.bench.scenarios.scaling.report import scaling_plots, scaling_section
from sm121.bench.scenarios.scaling.run import (
    DECODE_HEADLINE,
    PREFILL_HEADLINE,
    decode_scaling,
    flatten,
    prefill_scaling,
)


class _Scaling(Scenario[ScalingSample, ScalingSummary]):
    sample = ScalingSample
    summary = ScalingSummary
    needs_stream = False
    stream_option = True

    def flatten(self, samples: list[ScalingSample]) -> ScalingHeadline:
        return flatten(samples)

    def plots(self, results: Results, out: Path, stem: str) -> list[Path]:
        return scaling_plots(results, out, stem)

    def section(self, results: Results, files: list[Path]) -> list[str] | None:
        return scaling_section(results, files)


class DecodeScaling(_Scaling):
    name = "decode-scaling"
    help = "Aggregate and per-stream decode rates, TTFT, p50/p95 intervals over N streams."
    params = DecodeScalingParams
    headline = DECODE_HEADLINE

    async def run(self, ctx: Context, params: Params) -> ScalingSummary:
        return await decode_scaling(
            ctx, DecodeScalingSettings.model_validate(params.given()))


class PrefillScaling(_Scaling):
    name = "prefill-scaling"
    help = "Prompt tokens per second with N concurrent prefills."
    params = PrefillScalingParams
    headline = PREFILL_HEADLINE

    async def run(self, ctx: Context, params: Params) -> ScalingSummary:
        return await prefill_scaling(
            ctx, PrefillScalingParams.model_validate(params.given()))
