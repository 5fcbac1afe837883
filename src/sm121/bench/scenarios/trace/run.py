"""`trace`: send each request of the trace at its timestamp (scaled by --speed), each prompt
built from the trace's blocks (`blocks`), and measure TTFT, goodput against the SLO, the
prefix-cache hits against those the trace implies, and how late each request went out."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from pydantic import ValidationError

from sm121.bench.cached import counted_cached, counts_reported, summed_cached
from sm121.bench.client import StreamRecord
from sm121.bench.context import Context
from sm121.bench.prompts import filler
from sm121.bench.runner import first_error
from sm121.bench.scenarios.agents.slo import evaluate, parse_slo
from sm121.bench.scenarios.trace.blocks import (
    BlockTokens,
    implied_hits,
    scaled_length,
    token_pool,
    trace_reuse_share,
)
from sm121.bench.scenarios.trace.format import TraceRequest, load_trace
from sm121.bench.scenarios.trace.models import (
    CacheHits,
    Percentiles,
    TraceSample,
    TraceSettings,
    TraceSummary,
)
from sm121.bench.server import counter_deltas, read_counters
from sm121.bench.stats import inter_token_intervals, percentile
from sm121.engines.registry import metric_names
from sm121.errors import Sm121Error

POOL_WORDS = 600  # plain text whose token ids the prompts are drawn from


def settings(raw: dict[str, object]) -> TraceSettings:
    try:
        return TraceSettings.model_validate(raw)
    except ValidationError as exc:
        error = exc.errors()[0]
        raise Sm121Error(f"trace: --{str(error['loc'][0]).replace('_', '-')}: {error['msg']}",
                         "see `sm121 bench trace --help`") from exc


def load(p: TraceSettings) -> list[TraceRequest]:
    return load_trace(Path(p.file), p.format, p.limit)


async def trace(ctx: Context, p: TraceSettings) -> TraceSummary:
    requests = load(p)
    terms = parse_slo(p.slo)
    engine_block = _engine_block(ctx)
    outputs = [min(r.output_length, p.max_output or r.output_length) for r in requests]
    _check_window(requests, outputs, p, ctx.server.max_model_len)
    tokens = BlockTokens(await _pool(ctx), p.block_tokens, ctx.client.run_salt)
    implied = implied_hits(requests, p.block_tokens, engine_block or 1)
    before = await read_counters(ctx.client)
    start = time.monotonic()
    scheduled = [start + r.timestamp / 1000 / p.speed for r in requests]

    async def send(index: int) -> TraceSample:
        request = requests[index]
        record = await ctx.client.complete(
            tokens.prompt(request), outputs[index], f"trace-{index}", salt=False,
            extra=ctx.client.cache_salt_field(ctx.client.run_salt))
        sample = _sample(ctx, index, request, record, scheduled[index], outputs[index],
                         implied[index])
        ctx.progress(f"trace: request {index + 1} of {len(requests)} done", index + 1,
                     len(requests))
        ctx.add(sample)
        return sample

    try:  # each request goes out at its time; the first failure stops the replay
        async with asyncio.TaskGroup() as group:
            tasks = []
            for index, at in enumerate(scheduled):
                tokens.prompt(requests[index])  # its blocks made before its time comes
                await asyncio.sleep(max(0.0, at - time.monotonic()))
                tasks.append(group.create_task(send(index)))
    except BaseExceptionGroup as grouped:
        raise first_error(grouped) from None
    samples = [t.result() for t in tasks]
    deltas = counter_deltas(before, await read_counters(ctx.client))
    judged = evaluate(terms, samples)
    return TraceSummary(
        requests=len(samples), trace_s=round(scheduled[-1] - start, 3),
        wall_s=round(time.monotonic() - start, 3), speed=p.speed, block_tokens=p.block_tokens,
        engine_block=engine_block, ttft_s=_percentiles([s.ttft_s for s in samples]),
        lag_s=_percentiles([s.lag_s for s in samples]), slo=judged.slo,
        goodput=judged.goodput, good_requests=judged.good_turns, slo_met=judged.met,
        cache=_cache_hits(samples, deltas, trace_reuse_share(requests)))


async def _pool(ctx: Context) -> list[int]:
    result = await ctx.client.engine.tokenize({"model": ctx.client.model,
                                               "prompt": filler(POOL_WORDS, seed=512),
                                               "add_special_tokens": False})
    try:
        return token_pool([int(i) for i in result["tokens"]])
    except (KeyError, TypeError, ValueError) as exc:
        raise Sm121Error(f"the server's /tokenize gave no usable token ids: {exc}",
                         "trace prompts are token ids drawn from the server's tokenizer"
                         ) from exc


def _engine_block(ctx: Context) -> int | None:
    value = (ctx.server.cache_config or {}).get("block_size")
    try:
        return int(str(value)) if value is not None else None
    except ValueError:
        return None


def _check_window(requests: list[TraceRequest], outputs: list[int], p: TraceSettings,
                  window: int | None) -> None:
    if window is None:
        return
    for index, (request, output) in enumerate(zip(requests, outputs, strict=True)):
        need = scaled_length(request, p.block_tokens) + output
        if need > window:
            scale = 1 << max(0, (p.block_tokens * window // need).bit_length() - 1)
            raise Sm121Error(
                f"trace request {index + 1}: {need:,} tokens (prompt at {p.block_tokens} a "
                f"block + {output} out) exceed the served window of {window:,}",
                f"scale lengths down (--block-tokens {scale}), cap outputs (--max-output), "
                "or replay fewer requests (--limit)")


def _sample(ctx: Context, index: int, request: TraceRequest, record: StreamRecord,
            scheduled: float, output: int, implied: int) -> TraceSample:
    t0 = ctx.t0
    first, finished = record.first_token, record.finished
    decode = None
    if first is not None and finished is not None and record.tokens > 1 and finished > first:
        decode = round((record.tokens - 1) / (finished - first), 3)
    return TraceSample(
        request=index, scheduled=round(scheduled - t0, 6),
        submitted=round(record.submitted - t0, 6),
        lag_s=round(record.submitted - scheduled, 6),
        first_token=None if first is None else round(first - t0, 6),
        finished=None if finished is None else round(finished - t0, 6),
        ttft_s=None if record.ttft is None else round(record.ttft, 6),
        e2e_s=None if finished is None else round(finished - record.submitted, 6),
        prompt_tokens=record.prompt_tokens, completion_tokens=record.tokens,
        output_asked=output, blocks=len(request.hash_ids), cached_tokens=record.cached_tokens,
        implied_cached=implied, decode_tok_s=decode,
        itl_p95_s=percentile(inter_token_intervals(record.chunk_times, record.chunk_tokens), 95),
        finish_reason=record.finish_reason)


def _percentiles(values: list[float | None]) -> Percentiles:
    known = [v for v in values if v is not None]
    return Percentiles(p50=_round(percentile(known, 50)), p95=_round(percentile(known, 95)),
                       max=_round(max(known)) if known else None)


def usage_hits(samples: list[TraceSample]) -> int | None:
    """The requests' cached prompt tokens as their usage says, summed (cached.summed_cached: a
    request with no count, where others have one, cached nothing: vLLM leaves the count out
    where it is 0); None where no request says one."""
    return summed_cached(((s.cached_tokens, s.prompt_tokens) for s in samples),
                         counts_reported(s.cached_tokens for s in samples))


def short_requests(samples: list[TraceSample]) -> int | None:
    """How many requests found fewer tokens cached than the trace implies, each read by
    cached.counted_cached (a request with no count, where others have one, found none; one
    with no prompt count, a request that failed, is not known); None where no request says
    a count."""
    reported = counts_reported(s.cached_tokens for s in samples)
    if not reported:
        return None
    return sum(c < s.implied_cached for s in samples
               if (c := counted_cached(s.cached_tokens, s.prompt_tokens, reported)) is not None)


def _cache_hits(samples: list[TraceSample], deltas: dict[str, float],
                block_reuse: float) -> CacheHits:
    prompt = sum(s.prompt_tokens or 0 for s in samples)
    implied = sum(s.implied_cached for s in samples)
    usage = usage_hits(samples)
    names = metric_names()
    queries = names.queries_in(deltas)
    hits = next((deltas[n] for n in names.prefix_hits if n in deltas), None)
    return CacheHits(prompt_tokens=prompt, implied=implied, usage=usage,
                     usage_vs_implied=_ratio(usage, implied),
                     short_requests=short_requests(samples),
                     engine_queries=queries,
                     engine_hits=hits, engine_vs_implied=_ratio(hits, implied),
                     trace_block_reuse=_round(block_reuse))


def _ratio(value: float | None, implied: int) -> float | None:
    return None if value is None or implied == 0 else round(value / implied, 4)


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 6)
