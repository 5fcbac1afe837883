"""`trace` as a `Scenario`: its params, sample and summary models, A/B headline and terminal
lines. The first scenario added as one package plus one table line (docs/bench.md)."""

from __future__ import annotations

from pathlib import Path

from sm121.bench.context import Context
from sm121.bench.result_models import ScenarioResults
from sm121.bench.scenario import Params, Results, Scenario
from sm121.bench.scenarios.trace.models import (
    TraceHeadline,
    TraceParams,
    TraceSample,
    TraceSummary,
)
from sm121.bench.scenarios.trace.run import load, settings, trace, usage_hits
from sm121.bench.stats import percentile
from sm121.display_markdown import inert


class Trace(Scenario[TraceSample, TraceSummary]):
    name = "trace"
    help = ("Replay a request trace (Mooncake's JSON Lines: timestamp ms, input_length, "
            "output_length, hash_ids of 512-token blocks) on its timestamps. Prompts that "
            "share hash_ids share tokens, so the engine's prefix cache sees the trace's reuse; "
            "reports TTFT, goodput against --slo, prefix-cache hits (usage cached_tokens and "
            "the engine's counters) against the hits the trace's hash_ids imply, and how late "
            "each request went out. Lengths longer than the served window or too slow for the "
            "engine: scale them with --block-tokens (256 halves every prompt, same reuse). "
            "Public traces: kvcache-ai/Mooncake FAST25-release/traces (Apache-2.0).")
    params = TraceParams
    sample = TraceSample
    summary = TraceSummary
    metrics = TraceHeadline  # flatten's model: an A/B or sweep entry's `metrics`
    api_option = False  # its prompts are token ids: completions only
    headline = (("ttft_p50_s", "TTFT p50", "s", "lower"),
                ("ttft_p95_s", "TTFT p95", "s", "lower"),
                ("hit_share", "prefix-cache hits / prompt tokens", "pct", "higher"),
                ("lag_p95_s", "arrival lag p95", "s", "lower"))

    def prepare(self, values: Params) -> Params:
        """The trace read and every line checked before anything is sent."""
        load(settings(values.given()))
        return values

    async def run(self, ctx: Context, params: Params) -> TraceSummary:
        return await trace(ctx, settings(params.given()))

    def flatten(self, samples: list[TraceSample]) -> TraceHeadline | None:
        if not samples:
            return None
        ttft = [s.ttft_s for s in samples if s.ttft_s is not None]
        prompt = sum(s.prompt_tokens or 0 for s in samples)
        cached = usage_hits(samples)
        return TraceHeadline(
            ttft_p50_s=percentile(ttft, 50), ttft_p95_s=percentile(ttft, 95),
            hit_share=cached / prompt if prompt and cached is not None else None,
            lag_p95_s=percentile([s.lag_s for s in samples], 95))

    def section(self, results: Results, files: list[Path]) -> list[str] | None:
        """A run's report: its summary lines (an A/B of trace: its headline table)."""
        if isinstance(results, ScenarioResults) and isinstance(results.summary, TraceSummary):
            return [*(f"- {inert(line)}" for line in self.console(results.summary)), ""]
        return None

    def console(self, summary: TraceSummary) -> list[str]:
        c = summary.cache
        usage = "not reported" if c.usage is None else \
            f"{c.usage:,} ({_share(c.usage_vs_implied)} of implied" + \
            (f"; {c.short_requests} requests below theirs)" if c.short_requests else ")")
        engine = "no counters" if c.engine_hits is None else \
            f"{c.engine_hits:,.0f} ({_share(c.engine_vs_implied)} of implied)"
        return [
            f"{summary.requests} requests over {summary.trace_s:.1f} s of trace at speed "
            f"{summary.speed:g} ({summary.wall_s:.1f} s wall); {summary.block_tokens} tokens a "
            f"block, engine block {summary.engine_block or 'unknown'}",
            f"TTFT p50 {_s(summary.ttft_s.p50)}, p95 {_s(summary.ttft_s.p95)}; goodput "
            f"{_share(summary.goodput)} against {summary.slo} "
            f"({'met' if summary.slo_met else 'not met'})",
            f"prefix-cache hits (prompt tokens): implied {c.implied:,} of {c.prompt_tokens:,}; "
            f"usage {usage}; engine {engine}",
            f"arrival lag p50 {_s(summary.lag_s.p50)}, p95 {_s(summary.lag_s.p95)}, max "
            f"{_s(summary.lag_s.max)}"]


def _s(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f} s"


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"
