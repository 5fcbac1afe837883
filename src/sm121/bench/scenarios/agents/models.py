"""The records an agents or replay run writes: its first sample is the run's config, then
one per turn; and its summary."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from sm121.bench.result_models import Number, Open


class Workload(Open):
    """The workload as resolved (`agents.workload`): its name and the turn the SLO judges
    from are read; the rest of its spec is kept as written."""

    name: str | None = None
    slo_from_turn: int | None = None


class AgentsConfig(Open):
    """The first record of an agents or replay run: what ran, and the SLO it is judged by."""

    kind: Literal["config"]
    workload: Workload
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


class TermHeld(Open):
    """One SLO term's judgement (`agents.slo.TermJudgement`)."""

    term: str | None = None
    observed: Number | None = None
    met: bool | None = None
    turns_meeting: int | None = None


class SloHeld(Open):
    """The run against its SLO (`agents.slo.SloJudgement`)."""

    slo: str | None = None
    terms: list[TermHeld] = Field(default_factory=list)
    turns: int | None = None
    good_turns: int | None = None
    goodput: Number | None = None
    met: bool | None = None


class TurnRowHeld(Open):
    """One turn index over the sessions (`agents.summary_model.TurnRow`)."""

    turn: int | None = None
    n: int | None = None
    ttft_p50_s: Number | None = None
    ttft_p95_s: Number | None = None
    ttft_p99_s: Number | None = None
    reuse_mean: Number | None = None
    reuse_min: Number | None = None
    prompt_tokens_mean: Number | None = None


class AgentRowHeld(Open):
    """One agent's turns (`agents.summary_model.AgentRow`)."""

    agent: int | None = None
    turns: int | None = None
    decode_p50: Number | None = None
    decode_p5: Number | None = None
    ttft_p95_s: Number | None = None


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
    slo: SloHeld | None = None  # none while the run has no verdict yet
    by_turn: list[TurnRowHeld] = Field(default_factory=list)
    per_agent: list[AgentRowHeld] = Field(default_factory=list)
