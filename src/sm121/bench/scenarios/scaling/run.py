"""`decode-scaling` and `prefill-scaling`: N concurrent requests for each N in a list.

Decode: N streams of short prompts generating M tokens each (ignore_eos): aggregate and
per-stream token rates, TTFT min/max, p50/p95 inter-token intervals, speculative acceptance
from /metrics deltas. Prefill: N prompts of P tokens each (max_tokens 1): prompt tokens per
second in aggregate, TTFT min/max. Without streaming (--no-stream) the rates come from usage
and whole-request times; interval metrics are then absent."""

from __future__ import annotations

from sm121.bench.client import StreamRecord
from sm121.bench.prompts import filler, salted_exact_prompt
from sm121.bench.result_models import Number
from sm121.bench.runner import Context, run_together
from sm121.bench.scenarios.scaling.models import (
    DecodeMetrics,
    DecodeScalingSettings,
    PrefillMetrics,
    PrefillScalingParams,
    ScalingHeadline,
    ScalingMetrics,
    ScalingSample,
    ScalingSummary,
)
from sm121.bench.server import counter_deltas, read_counters, spec_acceptance
from sm121.bench.stats import inter_token_intervals, percentile

DECODE_HEADLINE = tuple(
    (f"aggregate_tok_s@{n}", f"decode aggregate tok/s at N={n}", "int", "higher")
    for n in (1, 2, 4, 6))
PREFILL_HEADLINE = tuple(
    (f"prefill_tok_s@{n}", f"prefill aggregate prompt tok/s at N={n}", "int", "higher")
    for n in (1, 2, 4, 6))


async def decode_scaling(ctx: Context, p: DecodeScalingSettings) -> ScalingSummary:
    await ctx.client.complete(filler(p.prompt_words, 1), p.max_tokens, "warmup")
    rows = []
    for index, n in enumerate(p.n):
        ctx.progress(f"decode N={n}", index, len(p.n))
        before = await read_counters(ctx.client)
        records = await run_together(*(ctx.client.complete(
            filler(p.prompt_words, seed=i), p.max_tokens, f"decode-{n}-{i}")
            for i in range(n)))
        deltas = counter_deltas(before, await read_counters(ctx.client))
        row = ScalingMetrics(n=n, **decode_metrics(records).model_dump(),
                             spec_acceptance=spec_acceptance(deltas))
        ctx.add(ScalingSample(kind="decode", n=n, metrics=row, counters=deltas,
                              requests=[r.to_json(ctx.t0) for r in records]))
        rows.append(row)
    return ScalingSummary(rows=rows)


async def prefill_scaling(ctx: Context, p: PrefillScalingParams) -> ScalingSummary:
    rows = []
    for index, n in enumerate(p.n):
        ctx.progress(f"prefill N={n}", index, len(p.n))
        prompts = [await salted_exact_prompt(ctx.client, p.prompt_tokens, seed=i) for i in range(n)]
        records = await run_together(*(ctx.client.complete(
            prompt, 1, f"prefill-{n}-{i}", salt=False, extra=ctx.client.cache_salt_field(tag))
            for i, (prompt, tag) in enumerate(prompts)))
        row = ScalingMetrics(n=n, **prefill_metrics(records).model_dump())
        ctx.add(ScalingSample(kind="prefill", n=n, metrics=row,
                              requests=[r.to_json(ctx.t0) for r in records]))
        rows.append(row)
    return ScalingSummary(rows=rows)


def decode_metrics(records: list[StreamRecord]) -> DecodeMetrics:
    firsts = [r.first_token or r.finished or r.submitted for r in records]
    lasts = [r.chunk_times[-1] if r.chunk_times else r.submitted for r in records]
    ttfts = [f - r.submitted for f, r in zip(firsts, records, strict=True)]
    decoded = [r.tokens - (r.chunk_tokens[0] if r.chunk_tokens else 0) for r in records]
    span = max(lasts) - min(firsts)
    per_stream = [d / (last - f) for d, last, f in zip(decoded, lasts, firsts, strict=True)
                  if last > f]
    intervals = [i for r in records for i in inter_token_intervals(r.chunk_times,
                                                                   r.chunk_tokens)]
    if not per_stream:  # not streamed: whole-request rates from usage
        per_stream = [r.tokens / ((r.finished or r.submitted) - r.submitted or 1.0)
                      for r in records]
        span = max((r.finished or r.submitted) for r in records) - min(r.submitted
                                                                     for r in records)
        decoded = [r.tokens for r in records]
    return DecodeMetrics(
        aggregate_tok_s=sum(decoded) / span if span > 0 else None,
        per_stream_tok_s_min=min(per_stream), per_stream_tok_s_median=percentile(per_stream, 50),
        ttft_min_s=min(ttfts), ttft_max_s=max(ttfts), itl_p50_s=percentile(intervals, 50),
        itl_p95_s=percentile(intervals, 95), tokens=sum(r.tokens for r in records))


def prefill_metrics(records: list[StreamRecord]) -> PrefillMetrics:
    ends = [r.first_token or r.finished or r.submitted for r in records]
    ttfts = [e - r.submitted for e, r in zip(ends, records, strict=True)]
    prompt = sum(r.prompt_tokens or 0 for r in records)
    span = max(ends) - min(r.submitted for r in records)
    return PrefillMetrics(prefill_tok_s=prompt / span if span > 0 else None,
                          prompt_tokens=prompt, ttft_min_s=min(ttfts), ttft_max_s=max(ttfts))


def flatten(samples: list[ScalingSample]) -> ScalingHeadline:
    """{aggregate_tok_s@N or prefill_tok_s@N: value} for an A/B table."""
    flat: dict[str, Number | None] = {}
    for sample in samples:
        key = "aggregate_tok_s" if sample.kind == "decode" else "prefill_tok_s"
        flat[f"{key}@{sample.n}"] = getattr(sample.metrics, key, None)
    return ScalingHeadline(flat)
