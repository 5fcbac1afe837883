"""`overlap`: what one long prefill does to ongoing decode and to admission.

One repetition: warm up with long generations; calibrate decode and prefill rates; measure
idle TTFT of a short request; start one ongoing stream (ignore_eos, sized to outlive the
window: it is its own baseline); after `before_s` submit a long prompt of exactly L tokens
(max_tokens 1); send short requests at fractions of the predicted prefill; collect."""

from __future__ import annotations

import asyncio
import time
from statistics import median

from sm121.bench.client import StreamRecord
from sm121.bench.prompts import count_tokens, exact_prompt, filler, salted_exact_prompt
from sm121.bench.runner import Context, first_error
from sm121.bench.scenarios.overlap.metrics import overlap_metrics, summarize_reps
from sm121.bench.scenarios.overlap.models import (
    OngoingRecord,
    OverlapSample,
    OverlapSettings,
    OverlapSummary,
    Prediction,
    RequestRecord,
)
from sm121.bench.server import counter_deltas, read_counters

SHORT_PROMPT = filler(24, seed=7)


async def overlap(ctx: Context, p: OverlapSettings) -> OverlapSummary:
    metrics = []
    for rep in range(p.reps):
        for sample in await _repetition(ctx, p, rep):
            ctx.add(sample)
            metrics.append(sample.metrics)
    return summarize_reps(metrics)


async def _repetition(ctx: Context, p: OverlapSettings, rep: int) -> list[OverlapSample]:
    """A stream that ended inside the window is no measurement: it is kept (marked invalid)
    and the repetition is retried once with twice the margin."""
    samples = []
    for attempt in range(2):
        samples.append(await _attempt(ctx, p, rep, attempt,
                                      p.outlive_margin * (attempt + 1)))
        if samples[-1].metrics.outlived:
            break
    return samples


async def _attempt(ctx: Context, p: OverlapSettings, rep: int, attempt: int,
                   margin: float) -> OverlapSample:
    # A single repetition (each of bench ab's, which says its own repetition) has no number.
    label = f"rep {rep + 1}: " if p.reps > 1 else ""
    client, say = ctx.client, (lambda m: ctx.progress(f"{label}{m}", rep, p.reps))
    counters = await read_counters(client)
    say("warm-up and calibration")
    warm = [await client.complete(filler(64, seed=i), p.warmup_tokens, f"warmup-{i}")
            for i in range(p.warmup_requests)]
    calibration = [await _prefill(ctx, n, f"calibrate-{n}", seed=rep)
                   for n in _calibration_sizes(p.prefill_tokens)]
    predicted_s = predict_prefill_s(
        [(r.prompt_tokens or 0, r.ttft or 0.0) for r in calibration], p.prefill_tokens)
    idle = [await client.complete(SHORT_PROMPT, p.short_max_tokens, f"idle-{i}")
            for i in range(p.idle_probes)]
    idle_ttft = median(r.ttft for r in idle if r.ttft is not None)
    say("building the long prompt")
    tag = client.new_salt()
    long_prompt = await exact_prompt(client, p.prefill_tokens, f"[{tag}] ", seed=rep)
    tokenize_s = await _tokenize_time(ctx, long_prompt)
    # Generous on purpose: a stream that ends inside the window spoils the repetition, a long
    # tail only costs time. Decode runs faster than in a short warm-up more often than not.
    decode_rate = 1.5 * max(_decode_rate(r) for r in warm)
    # + 5 s: a starved API server delivers the first token late, after decoding for a while.
    budget_s = p.before_s + 2 * tokenize_s + predicted_s * margin + p.after_s + 5.0
    max_out = (ctx.server.max_model_len or 1 << 20) - 256
    ongoing_tokens = max(64, min(int(decode_rate * budget_s) + 64, max_out))
    say(f"prefill of {p.prefill_tokens} tokens (predicted {predicted_s:.0f} s)")
    ongoing, long, shorts = await _overlap(ctx, p, long_prompt, tag, ongoing_tokens,
                                           tokenize_s, predicted_s)
    long_record = RequestRecord.model_validate(long.to_json(ctx.t0))
    sample = OverlapSample(
        rep=rep, attempt=attempt, prefill_tokens=p.prefill_tokens, before_s=p.before_s,
        idle_ttft_s=idle_ttft,
        predicted=Prediction(decode_tok_s=decode_rate, prefill_s=predicted_s,
                             tokenize_s=tokenize_s, ongoing_max_tokens=ongoing_tokens,
                             margin=margin),
        warmup=[r.to_json(ctx.t0) for r in warm],
        calibration=[r.to_json(ctx.t0) for r in calibration],
        idle=[r.to_json(ctx.t0) for r in idle],
        long=long_record, shorts=[RequestRecord.model_validate(s.to_json(ctx.t0)) for s in shorts],
        counters=counter_deltas(counters, await read_counters(client)),
        ongoing=_trim(OngoingRecord.model_validate(ongoing.to_json(ctx.t0)), long_record, p))
    sample.metrics = overlap_metrics(sample)
    return sample


async def _overlap(ctx: Context, p: OverlapSettings, long_prompt: str | list[int], tag: str,
                   ongoing_tokens: int, tokenize_s: float, predicted_s: float
                   ) -> tuple[StreamRecord, StreamRecord, list[StreamRecord]]:
    client = ctx.client
    ongoing = StreamRecord("ongoing", 0.0)
    try:
        async with asyncio.TaskGroup() as group:
            group.create_task(client.complete(filler(32, seed=11), ongoing_tokens, "ongoing",
                                              into=ongoing))
            await _first_token(ongoing)
            await _baseline(ongoing, p.before_s, ongoing_tokens)
            submitted = time.monotonic()
            long_task = group.create_task(client.complete(
                long_prompt, 1, "long", salt=False, extra=client.cache_salt_field(tag)))
            short_tasks = [group.create_task(_short_at(
                ctx, submitted + tokenize_s + f * predicted_s, p, i))
                for i, f in enumerate(p.short_at)]
    except BaseExceptionGroup as grouped:
        raise first_error(grouped) from None
    return ongoing, long_task.result(), [t.result() for t in short_tasks]


async def _short_at(ctx: Context, when: float, p: OverlapSettings, index: int) -> StreamRecord:
    await asyncio.sleep(max(0.0, when - time.monotonic()))
    return await ctx.client.complete(SHORT_PROMPT, p.short_max_tokens, f"short-{index}")


async def _baseline(record: StreamRecord, before_s: float, max_tokens: int) -> None:
    """Let the stream run undisturbed for `before_s`, but not past a third of its tokens: a
    stream that arrives late and in bursts must keep enough to outlive the window."""
    deadline = time.monotonic() + before_s
    while time.monotonic() < deadline and record.tokens < max_tokens / 3:
        await asyncio.sleep(0.05)


async def _first_token(record: StreamRecord, timeout_s: float = 600.0) -> None:
    deadline = time.monotonic() + timeout_s
    while record.first_token is None:
        if time.monotonic() > deadline:
            raise TimeoutError("the ongoing stream produced no token")
        await asyncio.sleep(0.01)


async def _prefill(ctx: Context, tokens: int, label: str, seed: int) -> StreamRecord:
    prompt, tag = await salted_exact_prompt(ctx.client, tokens, seed + 1000)
    return await ctx.client.complete(prompt, 1, label, salt=False,
                                     extra=ctx.client.cache_salt_field(tag))


async def _tokenize_time(ctx: Context, prompt: str | list[int]) -> float:
    """How long the API server takes to tokenise the long prompt before the engine sees it."""
    if not isinstance(prompt, str):
        return 0.0
    started = time.monotonic()
    await count_tokens(ctx.client, prompt)
    return time.monotonic() - started


def _calibration_sizes(prefill_tokens: int) -> list[int]:
    return [max(256, prefill_tokens // 8), max(512, prefill_tokens // 4)]


def predict_prefill_s(points: list[tuple[int, float]], tokens: int) -> float:
    """Prefill time from two measured prefills, as t = a*n + b*n^2 (attention grows with
    depth, so a linear extrapolation from short prompts is far too optimistic)."""
    (n1, t1), (n2, t2) = points[0], points[-1]
    if n1 <= 0 or n2 <= 0 or n1 == n2:
        return t2 * tokens / max(n2, 1)
    b = (t2 / n2 - t1 / n1) / (n2 - n1)
    a = t1 / n1 - b * n1
    if b <= 0 or a < 0:
        return max(t1 / n1, t2 / n2) * tokens
    return a * tokens + b * tokens * tokens


def _decode_rate(record: StreamRecord) -> float:
    """Tokens over the whole request time: robust to chunks that arrive in bursts."""
    elapsed = (record.finished or record.submitted) - record.submitted
    return record.tokens / elapsed if elapsed > 0 else 1.0


def _trim(record: OngoingRecord, long: RequestRecord, p: OverlapSettings) -> OngoingRecord:
    """Keep the ongoing stream's chunks from the baseline to just after the window (the rest
    is the stream's tail); its totals and its last chunk time stay, for the checks."""
    lo = long.submitted - p.before_s - 1.0
    hi = (long.first_token or long.submitted) + p.after_s
    kept = [(t, n) for t, n in zip(record.chunk_times, record.chunk_tokens, strict=True)
            if lo <= t <= hi]
    record.last_chunk = record.chunk_times[-1] if record.chunk_times else None
    record.chunk_times = [round(t, 4) for t, _ in kept]
    record.chunk_tokens = [n for _, n in kept]
    record.trimmed_to = [round(lo, 4), round(hi, 4)]
    return record
