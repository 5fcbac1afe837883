"""The records an agents or replay run writes: its first sample is the run's config, then
one per turn; and its summary."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from sm121.bench.result_models import Number, Open

Raw = dict[str, Any]  # the workload as resolved, and per-turn/agent rows: JSON as written


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
    """`agents.summary.summarize_run` plus what the run adds (engine deltas, wall time)."""

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
