"""Metrics of one overlap repetition, computed from its raw sample (pure, so a report can
recompute them). Two windows end at the long request's first token:
- client: from the long request's submission (what a client sees; includes the API server's
  tokenisation, during which the ongoing stream still decodes undisturbed);
- engine: from the knee of the ongoing stream (stats.engine_start), when the engine really
  began the prefill. The headline uses the engine window for decode and gaps; prefill
  throughput is given for both windows."""

from __future__ import annotations

from typing import TypeVar

from sm121.bench.result_models import Number
from sm121.bench.scenarios.overlap.models import (
    Delivery,
    OverlapHeadline,
    OverlapMetrics,
    OverlapSample,
    OverlapSummary,
    RequestRecord,
    ShortMetrics,
    WindowMetrics,
)
from sm121.bench.stats import (
    Window,
    admission_valid,
    clipped_gaps,
    decode_share,
    engine_start,
    gap_stats,
    largest_burst,
    outlives,
    rate,
    summarize,
    tokens_in,
)

T = TypeVar("T")
HEADLINE_WINDOW = "engine"
# The metrics an A/B compares, in table order: (key, label, format, better when).
HEADLINE = (
    ("decode_share", "decode share during prefill (same stream, during/before; engine window)",
     "pct", "higher"),
    ("decode_tokens", "decode tokens in the engine window", "int", "higher"),
    ("decode_tokens_client", "decode tokens in the client window (from submission)", "int",
     "higher"),
    ("decode_share_client", "decode share, client window", "pct", "higher"),
    ("gap_p50", "p50 output gap in window (s)", "s", "lower"),
    ("gap_p95", "p95 output gap in window (s)", "s", "lower"),
    ("gap_max", "max output gap in window (s)", "s", "lower"),
    ("prefill_tok_s", "prefill throughput, engine window (tok/s)", "int", "higher"),
    ("prefill_tok_s_client", "prefill throughput, client window (tok/s)", "int", "higher"),
    ("short_ttft_s", "short-request TTFT during the prefill (s)", "s", "lower"),
    ("idle_ttft_s", "idle TTFT of the same short request (s)", "s", "lower"),
    ("admission_ratio", "admission ratio (TTFT during / idle)", "x", "lower"),
    ("engine_delay_s", "submission to engine start (tokenisation) (s)", "s", "lower"),
    ("before_tok_s", "undisturbed decode before (tok/s)", "int", "higher"),
)


def _window_metrics(times: list[float], tokens: list[int], window: Window,
                    before_rate: float | None) -> WindowMetrics:
    during = rate(times, tokens, window)
    return WindowMetrics(start=window.start, end=window.end, length_s=window.length,
                         decode_tokens=tokens_in(times, tokens, window), decode_tok_s=during,
                         decode_share=decode_share(during, before_rate),
                         gaps=gap_stats(clipped_gaps(times, window)))


def overlap_metrics(sample: OverlapSample) -> OverlapMetrics:
    ongoing, long = sample.ongoing, sample.long
    times, tokens = ongoing.chunk_times, ongoing.chunk_tokens
    if long.first_token is None or ongoing.first_token is None:
        raise ValueError("an overlap repetition without the long request's first token or "
                         "the ongoing stream's measures nothing")
    before_s = float(sample.before_s or 0.0)
    client = Window(long.submitted, long.first_token)
    before = Window(max(ongoing.first_token, client.start - before_s), client.start)
    before_rate = rate(times, tokens, before)
    started = engine_start(times, tokens, client.start, client.end, before_rate)
    engine = Window(started if started is not None else client.start, client.end)
    windows = {"client": _window_metrics(times, tokens, client, before_rate),
               "engine": _window_metrics(times, tokens, engine, before_rate)}
    delivery = _delivery_check(times, tokens, before, engine, before_rate, before_s)
    # Admission needs the prefill to have started when the short request was sent. The knee
    # says when, unless delivery lagged (then it opens late): fall back to the client window
    # after the measured tokenisation time.
    tokenized = client.start + (sample.predicted.tokenize_s if sample.predicted else 0.0)
    admission = engine if delivery.ok else Window(min(tokenized, client.end), client.end)
    idle_ttft = sample.idle_ttft_s
    shorts = [_short(s, client, admission, idle_ttft) for s in sample.shorts]
    short_ttft = summarize([s.ttft_s for s in shorts if s.valid])["median"]
    prompt_ok = long.prompt_tokens == sample.prefill_tokens
    # A trimmed stream keeps its true last chunk time apart.
    last = ongoing.last_chunk
    outlived = outlives([*times, last] if last is not None else times, client)
    head, whole = windows[HEADLINE_WINDOW], windows["client"]
    ok = delivery.ok  # decode metrics only from a stream that arrived as it was generated
    prefill = sample.prefill_tokens or 0
    return OverlapMetrics(
        windows=windows, headline_window=HEADLINE_WINDOW,
        engine_start_source="knee of the ongoing stream" if started is not None
        else "client (no distinct slowdown)", before_tok_s=before_rate,
        outlived=outlived, prompt_tokens_exact=prompt_ok,
        # No chunk before the prefill (a stall on a loaded host) leaves no baseline.
        valid=outlived and prompt_ok and bool(before_rate),
        shorts=shorts, short_ttft_s=short_ttft, idle_ttft_s=idle_ttft,
        admission_ratio=short_ttft / idle_ttft
        if short_ttft is not None and idle_ttft else None,
        delivery=delivery,
        decode_share=_kept(ok, head.decode_share),
        decode_tokens=_kept(ok, head.decode_tokens),
        decode_share_client=_kept(ok, whole.decode_share),
        decode_tokens_client=_kept(ok, whole.decode_tokens),
        gap_p50=_kept(ok, head.gaps["p50"]), gap_p95=_kept(ok, head.gaps["p95"]),
        gap_max=_kept(ok, head.gaps["max"]),
        prefill_tok_s=prefill / engine.length if engine.length else None,
        prefill_tok_s_client=prefill / client.length if client.length else None,
        engine_delay_s=engine.start - client.start)


def _kept(ok: bool, value: T) -> T | None:
    return value if ok else None


def _delivery_check(times: list[float], tokens: list[int], before: Window, engine: Window,
                    before_rate: float | None, before_s: float) -> Delivery:
    """Did the ongoing stream arrive as the engine generated it? On a starved host the API
    server (or the client) falls behind and flushes backlog in bursts: then arrival times say
    nothing about decode during the prefill. The baseline must cover at least half of
    `before_s` without a stall over 1 s, and no burst inside the engine window may exceed half
    a second of undisturbed decode."""
    gaps = clipped_gaps(times, before)
    stall = max(gaps) if gaps else None
    burst = largest_burst(times, tokens, engine)
    limit = 0.5 * (before_rate or 0.0)
    ok = (before.length >= 0.5 * before_s and stall is not None and stall <= 1.0
          and burst <= max(limit, 8))
    return Delivery(ok=ok, baseline_s=before.length, baseline_max_gap_s=stall,
                    largest_burst_tokens=burst, burst_limit_tokens=limit)


def _short(short: RequestRecord, client: Window, engine: Window,
           idle_ttft: Number | None) -> ShortMetrics:
    ttft = None if short.first_token is None else short.first_token - short.submitted
    valid = admission_valid(short.submitted, engine)
    return ShortMetrics(submitted=short.submitted, ttft_s=ttft,
                        in_client_window=admission_valid(short.submitted, client),
                        valid=valid and ttft is not None,
                        ratio=ttft / idle_ttft if ttft is not None and idle_ttft else None)


def summarize_reps(metrics: list[OverlapMetrics]) -> OverlapSummary:
    """Median and spread of every headline metric over the valid repetitions."""
    valid = [m for m in metrics if m.valid]
    return OverlapSummary.model_validate(
        {"reps": len(metrics), "valid_reps": len(valid),
         **{key: summarize([getattr(m, key, None) for m in valid]) for key, *_ in HEADLINE}})


def flatten_last_valid(samples: list[OverlapSample]) -> OverlapHeadline | None:
    """One boot runs one overlap repetition (an A/B entry): its metrics, when valid."""
    valid = [s.metrics for s in samples if s.metrics.valid]
    if not valid:
        return None
    return OverlapHeadline.model_validate({k: getattr(valid[-1], k, None) for k, *_ in HEADLINE})
