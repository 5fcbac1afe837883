"""What `overlap` takes and records: its params, one sample per repetition (the raw request
records `metrics.overlap_metrics` recomputes from, and the metrics computed from them) and
the summary over repetitions."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from sm121.bench.result_models import Number, Open, Stats
from sm121.bench.scenario import Params, option


class OverlapParams(Params):
    prefill_tokens: int = option(32768, "--prefill-tokens",
                                 "Long prompt length, exact to the token.", short="-L")
    short_at: list[float] = option([0.25, 0.5], "--short-at", "Short requests at these "
                                   "fractions of the predicted prefill.")
    before_s: float = option(5.0, "--before", "Seconds of undisturbed baseline.")
    reps: int = option(1, "--reps", "Repetitions (median and spread).")


class OverlapSettings(OverlapParams):
    """Everything a run uses: the command's params and the knobs only `--param` reaches."""

    short_max_tokens: int = 4
    after_s: float = 1.0
    warmup_tokens: int = 256
    warmup_requests: int = 2
    idle_probes: int = 3
    outlive_margin: float = 2.5


class RequestRecord(Open):
    """One streamed request as recorded (`StreamRecord.to_json`: times from the run's t0)."""

    label: str | None = None
    submitted: float = 0.0
    first_token: float | None = None
    finished: float | None = None
    chunk_times: list[float] = Field(default_factory=list)
    chunk_tokens: list[int] = Field(default_factory=list)
    completion_tokens: int | None = None
    prompt_tokens: int | None = None
    cached_tokens: int | None = None
    finish_reason: str | None = None


class OngoingRecord(RequestRecord):
    """The ongoing stream, its chunks trimmed to the window (`run._trim`)."""

    last_chunk: float | None = None  # the true last chunk time, kept apart from the trim
    trimmed_to: list[float] | None = None


class Prediction(Open):
    """What the calibration predicted, and so how long the ongoing stream was sized to run."""

    decode_tok_s: Number
    prefill_s: Number
    tokenize_s: Number = 0.0
    ongoing_max_tokens: int | None = None
    margin: Number | None = None


class WindowMetrics(Open):
    start: Number
    end: Number
    length_s: Number
    decode_tokens: int
    decode_tok_s: Number | None = None
    decode_share: Number | None = None
    gaps: dict[str, Number | None] = Field(default_factory=dict)  # stats.gap_stats


class Delivery(Open):
    """Did the ongoing stream arrive as the engine generated it (`metrics._delivery_check`)?"""

    ok: bool
    baseline_s: Number | None = None
    baseline_max_gap_s: Number | None = None
    largest_burst_tokens: Number | None = None
    burst_limit_tokens: Number | None = None


class ShortMetrics(Open):
    submitted: Number
    ttft_s: Number | None = None
    in_client_window: bool | None = None
    valid: bool = False
    ratio: Number | None = None


class OverlapMetrics(Open):
    """`metrics.overlap_metrics` of one repetition; the headline keys are `metrics.HEADLINE`'s
    (files written before a field existed lack it)."""

    windows: dict[str, WindowMetrics] = Field(default_factory=dict)
    headline_window: str | None = None
    engine_start_source: str | None = None
    before_tok_s: Number | None = None
    outlived: bool | None = None
    prompt_tokens_exact: bool | None = None
    valid: bool | None = None
    shorts: list[ShortMetrics] = Field(default_factory=list)
    short_ttft_s: Number | None = None
    idle_ttft_s: Number | None = None
    admission_ratio: Number | None = None
    delivery: Delivery | None = None
    decode_share: Number | None = None
    decode_tokens: int | None = None
    decode_share_client: Number | None = None
    decode_tokens_client: int | None = None
    gap_p50: Number | None = None
    gap_p95: Number | None = None
    gap_max: Number | None = None
    prefill_tok_s: Number | None = None
    prefill_tok_s_client: Number | None = None
    engine_delay_s: Number | None = None


class OverlapHeadline(BaseModel):
    """One A/B entry's headline (`metrics.HEADLINE`'s keys): the last valid repetition's."""

    decode_share: Number | None = None
    decode_tokens: Number | None = None
    decode_tokens_client: Number | None = None
    decode_share_client: Number | None = None
    gap_p50: Number | None = None
    gap_p95: Number | None = None
    gap_max: Number | None = None
    prefill_tok_s: Number | None = None
    prefill_tok_s_client: Number | None = None
    short_ttft_s: Number | None = None
    idle_ttft_s: Number | None = None
    admission_ratio: Number | None = None
    engine_delay_s: Number | None = None
    before_tok_s: Number | None = None


class OverlapSample(Open):
    """One repetition: the ongoing stream, the long prefill, the shorts (raw records, the
    evidence `overlap_metrics` recomputes from) and the metrics computed from them."""

    rep: int
    attempt: int = 0
    prefill_tokens: int | None = None
    before_s: Number | None = None
    idle_ttft_s: Number | None = None
    predicted: Prediction | None = None
    warmup: list[Any] = Field(default_factory=list)  # raw request records
    calibration: list[Any] = Field(default_factory=list)
    idle: list[Any] = Field(default_factory=list)
    long: RequestRecord = Field(default_factory=RequestRecord)
    shorts: list[RequestRecord] = Field(default_factory=list)
    counters: dict[str, float] = Field(default_factory=dict)  # the engine's counter deltas
    ongoing: OngoingRecord = Field(default_factory=OngoingRecord)
    metrics: OverlapMetrics = Field(default_factory=OverlapMetrics)


class OverlapSummary(Open):
    """`metrics.summarize_reps`: stats of every headline metric over valid reps."""

    reps: int = 0
    valid_reps: int = 0
    decode_share: Stats | None = None
    decode_tokens: Stats | None = None
    decode_tokens_client: Stats | None = None
    decode_share_client: Stats | None = None
    gap_p50: Stats | None = None
    gap_p95: Stats | None = None
    gap_max: Stats | None = None
    prefill_tok_s: Stats | None = None
    prefill_tok_s_client: Stats | None = None
    short_ttft_s: Stats | None = None
    idle_ttft_s: Stats | None = None
    admission_ratio: Stats | None = None
    engine_delay_s: Stats | None = None
    before_tok_s: Stats | None = None
