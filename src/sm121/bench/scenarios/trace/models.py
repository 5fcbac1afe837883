"""What `trace` takes and records: its params, one sample per replayed request, its summary."""

from __future__ import annotations

from pydantic import BaseModel, Field

from sm121.bench.result_models import Number
from sm121.bench.scenario import Params, option
from sm121.bench.scenarios.trace.format import TRACE_BLOCK
from sm121.open_model import Open

DEFAULT_SLO = "ttft_p95=2s"


class TraceParams(Params):
    file: str = option(..., "FILE", "The trace: JSON Lines in Mooncake's format (timestamp "
                       "ms, input_length, output_length, hash_ids of 512-token blocks), e.g. "
                       "kvcache-ai/Mooncake FAST25-release/traces/conversation_trace.jsonl.",
                       argument=True)
    format: str = option("mooncake", "--format", "The trace's format (mooncake).")
    speed: float = option(1.0, "--speed", "Replay speed: 2 sends at twice the trace's rate "
                          "(its gaps halved), 0.5 at half.")
    limit: int | None = option(None, "--limit", "Replay only the first N requests.")
    block_tokens: int = option(TRACE_BLOCK, "--block-tokens",
                               "Tokens per trace block: 512 replays the lengths as recorded; "
                               "less scales every prompt by BLOCK_TOKENS/512 with the same "
                               "reuse (for a smaller served window or a slow engine). Keep it "
                               "a multiple of the engine's KV block size.")
    max_output: int | None = option(None, "--max-output", "Cap each request's output tokens "
                                    "(default: the trace's output_length).")
    slo: str = option(DEFAULT_SLO, "--slo", "Goodput's SLO: METRIC_pQ=VALUE terms (ttft, e2e, "
                      "itl, decode), comma-separated, as `bench agents --slo`.")


class TraceSettings(TraceParams):
    """Everything a run uses: the command's params, checked."""

    speed: float = Field(1.0, gt=0)
    limit: int | None = Field(None, ge=1)
    block_tokens: int = Field(TRACE_BLOCK, ge=1, le=TRACE_BLOCK * 8)
    max_output: int | None = Field(None, ge=1)


class TraceSample(Open):
    """One replayed request (times in seconds since the run's t0)."""

    request: int  # its place in the trace (0: the first request)
    scheduled: float  # when the trace (scaled by --speed) says to send it
    submitted: float
    lag_s: float  # submitted - scheduled: how late the sender was
    first_token: float | None = None
    finished: float | None = None
    ttft_s: float | None = None
    e2e_s: float | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    output_asked: int
    blocks: int
    cached_tokens: int | None = None  # the server's usage.prompt_tokens_details
    implied_cached: int  # what an ideal prefix cache would hit (`blocks.Reuse`)
    decode_tok_s: float | None = None
    itl_p95_s: float | None = None
    finish_reason: str | None = None

    def metric(self, key: str) -> float | None:
        """A per-request metric by its record key (an SLO term names the key it judges)."""
        value = getattr(self, key, None)
        return None if value is None else float(value)


class CacheHits(BaseModel):
    """Prefix-cache hits against what the trace implies, in prompt tokens."""

    prompt_tokens: int
    implied: int  # an ideal cache (nothing evicted, every earlier prompt prefilled)
    usage: int | None = None  # usage.prompt_tokens_details.cached_tokens summed
    usage_vs_implied: Number | None = None
    short_requests: int | None = None  # requests whose cached_tokens fell below their implied
    engine_queries: Number | None = None  # the engine's prefix-cache counters over the run
    engine_hits: Number | None = None
    engine_vs_implied: Number | None = None
    trace_block_reuse: Number | None = None  # share of the trace's blocks seen before


class Percentiles(BaseModel):
    p50: Number | None = None
    p95: Number | None = None
    max: Number | None = None


class TraceSummary(Open):
    requests: int
    trace_s: Number  # the trace's span at this speed
    wall_s: Number
    speed: Number
    block_tokens: int
    engine_block: int | None = None  # the engine's KV block size (cache_config_info)
    ttft_s: Percentiles
    lag_s: Percentiles
    slo: str
    goodput: Number | None = None
    good_requests: int = 0
    slo_met: bool = False
    cache: CacheHits


class TraceHeadline(Open):
    """What `bench ab --scenario trace` compares (an A/B or sweep entry's `metrics`)."""

    ttft_p50_s: Number | None = None
    ttft_p95_s: Number | None = None
    hit_share: Number | None = None  # cached over prompt tokens
    lag_p95_s: Number | None = None
