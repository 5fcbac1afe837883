"""`knee`: on one engine, the prefill rate against the tokens of one engine step, and the
decode rate against the batch size, with repetitions; the knee and the decode saturation
point come from analysis.py beside it.

How a step size is varied on one boot (the honest way this uses): the engine's step budget
(vLLM's max-num-batched-tokens) is an engine arg, so instead of one boot per value the engine
is booted once with a budget at least as large as the largest step measured (`bench knee
--recipe` and `tune` set max-num-batched-tokens to it), and each measurement is one request
whose prompt is exactly N tokens (token ids, salted in its first block and by `cache_salt`
where the server takes it) with max_tokens 1, sent alone. Such a prompt is scheduled whole in
one step of exactly N tokens: prefill rate = N / that step's time. The engine window is the
engine's own prefill time of the request (the delta of vLLM's
request_prefill_time_seconds histogram over the request); the client window is the time to
the first token, which adds the API server and the HTTP round trip. What this does not
measure: a chunk of N tokens deep inside a long prompt also attends to the context before it,
so a long prefill's later chunks run slower than a fresh N-token prompt; the knee is about how
many tokens feed the device at once, which the fresh prompt isolates.

Decode: B streams of a short prompt generating `decode_tokens` each (ignore_eos), together:
the client's aggregate rate over the window from the first to the last token, and the
engine's (generation tokens over the mean per-request decode time, from its histograms).

Every size gets one unmeasured warm-up request first (rep -1), then `reps` measured ones;
the order of sizes alternates between repetitions."""

from __future__ import annotations

import asyncio
import time

from sm121.bench.client import BenchClient, StreamRecord
from sm121.bench.prompts import filler
from sm121.bench.runner import Context, run_together
from sm121.bench.scenarios.knee.analysis import summarize_knee
from sm121.bench.scenarios.knee.models import (
    DecodeBatch,
    KneeHeadline,
    KneeSample,
    KneeSettings,
    KneeSummary,
    PrefillStep,
)
from sm121.bench.scenarios.scaling.run import decode_metrics
from sm121.bench.server import read_counters
from sm121.engines.registry import metric_names
from sm121.errors import Sm121Error

# The engine's names (its adapter's table): the first name of each that the engine has.
_NAMES = metric_names()
_PREFILL, _DECODE = _NAMES.prefill_time[0], _NAMES.decode_time[0]
PREFILL_SUM, PREFILL_COUNT = f"{_PREFILL}_sum", f"{_PREFILL}_count"
DECODE_SUM, DECODE_COUNT = f"{_DECODE}_sum", f"{_DECODE}_count"
GENERATED = _NAMES.generation_tokens[0]
# The histograms are observed when the frontend logs a finished request, which may come just
# after the response ended: wait this long for the count to move.
METRICS_WAIT_S = 2.0

HEADLINE: tuple[tuple[str, str, str, str], ...] = (
    ("knee_step_engine", "prefill knee: tokens per step (engine window)", "int", "lower"),
    ("peak_prefill_tok_s_engine", "peak prefill tok/s (engine window)", "int", "higher"),
    ("knee_step_client", "prefill knee: tokens per step (client window)", "int", "lower"),
    ("decode_saturation_batch", "decode saturates at batch (engine window)", "int", "higher"),
    ("peak_decode_tok_s_engine", "peak decode tok/s (engine window)", "int", "higher"),
)


async def _settled(client: BenchClient, count: str, before: dict[str, float], moved: float
                   ) -> dict[str, float]:
    deadline = time.monotonic() + METRICS_WAIT_S
    while True:
        after = await read_counters(client)
        if count not in before and count not in after:
            return after  # the engine exports no such histogram (llama-server): nothing to wait for
        if after.get(count, 0.0) - before.get(count, 0.0) >= moved or \
                time.monotonic() > deadline:
            return after
        await asyncio.sleep(0.05)


async def filler_ids(client: BenchClient, tokens: int) -> list[int]:
    """At least `tokens` token ids of filler text, tokenized once without special tokens."""
    words = tokens
    for _ in range(8):
        body = {"model": client.model, "prompt": filler(words, seed=7),
                "add_special_tokens": False}
        ids = [int(i) for i in (await client.engine.tokenize(body))["tokens"]]
        if len(ids) >= tokens:
            return ids
        words *= 2
    raise Sm121Error(f"could not build {tokens} tokens of filler",
                     "the server's /tokenize returned too few tokens")


async def salted_ids(client: BenchClient, ids: list[int], tokens: int) -> tuple[list[int], str]:
    """Exactly `tokens` ids opened by a fresh salt tag (BOS included): its first cache block,
    and so every block after it, is new to the prefix cache."""
    tag = client.new_salt()
    body = {"model": client.model, "prompt": f"[{tag}] ", "add_special_tokens": True}
    head = [int(i) for i in (await client.engine.tokenize(body))["tokens"]]
    if len(head) >= tokens:
        return head[:tokens], tag
    return head + ids[:tokens - len(head)], tag


def _rate(tokens: float, seconds: float | None) -> float | None:
    return tokens / seconds if seconds and seconds > 0 else None


async def prefill_step(ctx: Context, ids: list[int], step: int, rep: int) -> PrefillStep:
    client = ctx.client
    prompt, tag = await salted_ids(client, ids, step)
    before = await read_counters(client)
    record = await client.complete(prompt, 1, f"prefill-{step}-{rep}", salt=False,
                                   extra=client.cache_salt_field(tag))
    after = await _settled(client, PREFILL_COUNT, before, 1)
    counted = after.get(PREFILL_COUNT, 0.0) - before.get(PREFILL_COUNT, 0.0)
    engine_s = (after.get(PREFILL_SUM, 0.0) - before.get(PREFILL_SUM, 0.0)) if counted == 1 \
        else None
    client_s = record.ttft or ((record.finished or record.submitted) - record.submitted)
    cached = record.cached_tokens  # as sent: the summary's prefill_cached checks the salt
    # The rates count the tokens the step computed: the step less what the engine says it
    # found cached; with no count, the whole step (the salt makes every block new)
    computed = step - (cached if cached is not None else 0)
    return PrefillStep(kind="prefill", step=step, rep=rep, prompt_tokens=record.prompt_tokens,
                       cached_tokens=cached, engine_s=engine_s, client_s=client_s,
                       engine_tok_s=_rate(computed, engine_s),
                       client_tok_s=_rate(computed, client_s))


async def decode_batch(ctx: Context, batch: int, tokens: int, rep: int) -> DecodeBatch:
    client = ctx.client
    before = await read_counters(client)
    records: list[StreamRecord] = await run_together(*(
        client.complete(filler(24, seed=i), tokens, f"decode-{batch}-{rep}-{i}")
        for i in range(batch)))
    after = await _settled(client, DECODE_COUNT, before, batch)
    generated = after.get(GENERATED, 0.0) - before.get(GENERATED, 0.0)
    count = after.get(DECODE_COUNT, 0.0) - before.get(DECODE_COUNT, 0.0)
    mean_decode_s = (after.get(DECODE_SUM, 0.0) - before.get(DECODE_SUM, 0.0)) / count \
        if count else None
    client_side = decode_metrics(records)
    # The first token of each stream comes from its prefill step, not from decode.
    decoded = generated - batch if generated else None
    return DecodeBatch(kind="decode", batch=batch, rep=rep, generated=generated,
                       engine_mean_decode_s=mean_decode_s,
                       engine_tok_s=_rate(decoded, mean_decode_s) if decoded else None,
                       client_tok_s=client_side.aggregate_tok_s,
                       per_stream_tok_s_median=client_side.per_stream_tok_s_median)


def _ordered(sizes: list[int], rep: int) -> list[int]:
    return sizes if rep % 2 == 0 else list(reversed(sizes))


def steps_that_fit(p: KneeSettings, max_model_len: int | None) -> tuple[list[int], list[int]]:
    """(kept, dropped): a step above the engine's step budget (`chunk`) would be split over
    several steps, and one above the context cannot be sent."""
    ceilings = [c for c in (p.chunk, max_model_len and max_model_len - 8) if c]
    ceiling = min(ceilings) if ceilings else None
    steps = sorted(p.steps)
    kept = [s for s in steps if ceiling is None or s <= ceiling]
    return kept, [s for s in steps if s not in kept]


async def knee(ctx: Context, p: KneeSettings) -> KneeSummary:
    max_model_len = ctx.server.max_model_len
    steps, dropped = steps_that_fit(p, max_model_len)
    if not steps:
        raise Sm121Error(f"no step of {p.steps} fits this engine (chunk {p.chunk}, "
                         f"max-model-len {max_model_len})", "pass smaller --steps")
    batches, reps = sorted(p.batches), p.reps
    ids = await filler_ids(ctx.client, max(steps))
    total = (reps + 1) * (len(steps) + len(batches))
    samples: list[KneeSample] = []
    for rep in range(-1, reps):  # -1: the warm-up pass, kept in the file, left out of medians
        for step in _ordered(steps, rep):
            ctx.progress(f"knee: prefill {step} tokens, rep {rep + 1}", len(samples), total)
            samples.append(await prefill_step(ctx, ids, step, rep))
            ctx.add(samples[-1])
        for batch in _ordered(batches, rep):
            ctx.progress(f"knee: decode batch {batch}, rep {rep + 1}", len(samples), total)
            samples.append(await decode_batch(ctx, batch, p.decode_tokens, rep))
            ctx.add(samples[-1])
    summary = summarize_knee(samples, p.tolerance)
    summary.steps, summary.dropped_steps, summary.batches, summary.reps = (
        steps, dropped, batches, reps)
    return summary


def flatten(samples: list[KneeSample]) -> KneeHeadline:
    """The headline numbers of one knee run (an A/B's table)."""
    s = summarize_knee(samples)
    engine, client = s.engine, s.client
    assert engine is not None and client is not None  # summarize_knee fills both
    return KneeHeadline(knee_step_engine=engine.knee.knee_at,
                        peak_prefill_tok_s_engine=engine.knee.peak,
                        knee_step_client=client.knee.knee_at,
                        decode_saturation_batch=engine.decode_saturation.knee_at,
                        peak_decode_tok_s_engine=engine.decode_saturation.peak)
