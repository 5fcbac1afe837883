"""One model per built-in scenario for the samples (and the summary) it records, named by
its registry entry. Raw request records (chunk times, counters) stay dicts: they are the
evidence the metric functions recompute from, and their shape is `client.StreamRecord`'s."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from sm121.bench.result_models import Number, Open

Raw = dict[str, Any]


class OverlapSample(Open):
    """One repetition of `overlap`: the ongoing stream, the long prefill, the shorts."""

    rep: int
    attempt: int = 0
    prefill_tokens: int | None = None
    before_s: Number | None = None
    idle_ttft_s: Number | None = None
    predicted: Raw = Field(default_factory=dict)
    warmup: list[Any] = Field(default_factory=list)
    calibration: list[Any] = Field(default_factory=list)
    idle: list[Any] = Field(default_factory=list)
    long: Raw = Field(default_factory=dict)
    shorts: list[Raw] = Field(default_factory=list)
    counters: Raw = Field(default_factory=dict)
    ongoing: Raw = Field(default_factory=dict)
    metrics: Raw = Field(default_factory=dict)  # overlap_metrics.overlap_metrics


class OverlapSummary(Open):
    """`overlap_metrics.summarize_reps`: stats of every headline metric over valid reps."""

    reps: int = 0
    valid_reps: int = 0


class ScalingMetrics(Open):
    n: int
    ttft_min_s: Number | None = None
    ttft_max_s: Number | None = None


class ScalingSample(Open):
    """One concurrency level of `decode-scaling` or `prefill-scaling`."""

    kind: Literal["decode", "prefill"]
    n: int
    metrics: ScalingMetrics
    counters: Raw | None = None
    requests: list[Raw] = Field(default_factory=list)


class ScalingSummary(Open):
    rows: list[ScalingMetrics] = Field(default_factory=list)


class LocalitySample(Open):
    """One turn of one placement of the mutating field."""

    placement: str
    turn: int
    ttft_s: Number | None = None
    prompt_tokens: int | None = None
    cached_tokens: int | None = None
    reuse_usage: Number | None = None
    reuse_metrics: Number | None = None
    request: Raw = Field(default_factory=dict)


class RetrievalSample(Open):
    """One needle at one depth of one context length."""

    length: int
    depth: Number
    prompt_tokens: int | None = None
    ttft_s: Number | None = None
    code: str | None = None
    answer: str | None = None
    found: bool | None = None
    distractors_returned: list[str] = Field(default_factory=list)  # codes it answered instead


class AgentsConfig(Open):
    """The first record of an agents or replay run: what ran, and the SLO it is judged by."""

    kind: Literal["config"]
    workload: Raw
    agents: int
    slo: str
    api: str | None = None
    turns: int | None = None
    duration_s: Number | None = None
    tools_mode: str | None = None
    tools_reason: str | None = None
    requests: int | None = None  # replay
    redacted: bool | None = None  # replay


class AgentTurn(Open):
    """One agent turn (kind "turn") or the background job's request ("background")."""

    kind: Literal["turn", "background"]
    agent: int
    conversation: int = 0
    turn: int
    submitted: Number
    first_token: Number | None = None
    finished: Number | None = None
    ttft_s: Number | None = None
    e2e_s: Number | None = None
    prompt_tokens: int | None = None
    cached_tokens: int | None = None
    completion_tokens: int | None = None
    expected_prompt_tokens: int | None = None
    reuse: Number | None = None
    finish_reason: str | None = None


AgentsSample = Annotated[AgentsConfig | AgentTurn, Field(discriminator="kind")]


class TtftStats(Open):
    p50: Number | None = None
    p95: Number | None = None
    p99: Number | None = None


class AgentsSummary(Open):
    """`agents.summary.summarize_agents` plus what the run adds (engine deltas, wall time)."""

    turns: int = 0
    workload: str | None = None
    agents: int | None = None
    tools_mode: str | None = None
    usage_checked: int = 0
    prompt_exact: int = 0
    ttft: TtftStats = Field(default_factory=TtftStats)
    ttft_judged: TtftStats = Field(default_factory=TtftStats)
    slo: Raw = Field(default_factory=dict)
    by_turn: list[Raw] = Field(default_factory=list)
    per_agent: list[Raw] = Field(default_factory=list)


class ProbeSample(Open):
    """`bench probe` records no samples; its summary is the probe report."""

