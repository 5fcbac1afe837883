"""What `decode-scaling` and `prefill-scaling` record: one sample per concurrency level
(its metrics, the engine's counters and the raw request records), and their summary."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, RootModel

from sm121.bench.result_models import Number, Open
from sm121.bench.scenario import Params, option

_N_HELP = "Concurrency levels."


class DecodeScalingParams(Params):
    n: list[int] = option([1, 2, 4, 6], "--n", _N_HELP)
    max_tokens: int = option(256, "--max-tokens")


class DecodeScalingSettings(DecodeScalingParams):
    """Everything a run uses: the command's params and the knobs only `--param` reaches."""

    prompt_words: int = 48


class PrefillScalingParams(Params):
    n: list[int] = option([1, 2, 4, 6], "--n", _N_HELP)
    prompt_tokens: int = option(4096, "--prompt-tokens")


class DecodeMetrics(Open):
    """The client's view of N streams decoding together (field order: the report's columns)."""

    aggregate_tok_s: Number | None = None
    per_stream_tok_s_min: Number | None = None
    per_stream_tok_s_median: Number | None = None
    ttft_min_s: Number | None = None
    ttft_max_s: Number | None = None
    itl_p50_s: Number | None = None
    itl_p95_s: Number | None = None
    tokens: int = 0


class PrefillMetrics(Open):
    prefill_tok_s: Number | None = None
    prompt_tokens: int = 0
    ttft_min_s: Number | None = None
    ttft_max_s: Number | None = None


class ScalingMetrics(Open):
    """One row of the summary: N, then its decode or prefill metrics (kept as written)."""

    n: int
    ttft_min_s: Number | None = None
    ttft_max_s: Number | None = None


class ScalingSample(Open):
    """One concurrency level of `decode-scaling` or `prefill-scaling`."""

    kind: Literal["decode", "prefill"]
    n: int
    metrics: ScalingMetrics
    counters: dict[str, float] | None = None  # the engine's counter deltas
    requests: list[dict[str, Any]] = Field(default_factory=list)  # raw request records


class ScalingSummary(Open):
    rows: list[ScalingMetrics] = Field(default_factory=list)


class ScalingHeadline(RootModel[dict[str, Number | None]]):
    """One run's headline, keyed by level: `aggregate_tok_s@N` or `prefill_tok_s@N` (the N
    a run measured are its own, so the keys are not fields)."""
