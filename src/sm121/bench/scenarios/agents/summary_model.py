"""What an agents run's summary holds, typed: TTFT percentiles overall, judged and by turn,
per-agent decode, prefix reuse, goodput against the SLO (slo.SloJudgement), the background
job, gateway queue wait and the client's own CPU; and the headline metrics an A/B, a sweep
or tune compares across runs. Field order is the results file's key order."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from sm121.bench.scenarios.agents.slo import SloJudgement


class Percentiles(BaseModel):
    p50: float | None = None
    p95: float | None = None
    p99: float | None = None


class QueueWait(BaseModel):
    """The gateway's queue wait (the header each turn's reply carries)."""

    p50: float | None = None
    p95: float | None = None


class TurnRow(BaseModel):
    """Turn index `turn` over every session: TTFT, prefix reuse, prompt size."""

    turn: int
    n: int
    ttft_p50_s: float | None
    ttft_p95_s: float | None
    ttft_p99_s: float | None
    reuse_mean: float | None
    reuse_min: float | None
    prompt_tokens_mean: float | None


class AgentRow(BaseModel):
    agent: int
    turns: int
    decode_p50: float | None
    decode_p5: float | None
    ttft_p95_s: float | None


class BackgroundSplit(BaseModel):
    """The background job, and the judged turns that waited during its prefill or not."""

    prompt_tokens: int | None
    submitted: float
    first_token: float | None
    ttft_s: float | None
    turns_during: int
    ttft_during: Percentiles
    ttft_outside: Percentiles


class Reuse(BaseModel):
    mean: float | None = None
    min: float | None = None


class ClientCpu(BaseModel):
    """The bench client's CPU during a turn (share of one core), so a busy client shows."""

    share_p50: float | None = None
    share_max: float | None = None
    cpu_s_p50: float | None = None


class AgentsSummary(BaseModel):
    workload: str | None
    agents: int | None
    tools_mode: str | None
    turns: int
    usage_checked: int
    prompt_exact: int
    # Messages/Responses: turns whose content events equal usage's tokens (None on chat)
    events_match_usage: int | None
    ttft: Percentiles
    judged_from_turn: int
    ttft_judged: Percentiles
    by_turn: list[TurnRow]
    reuse_after_first: Reuse
    per_agent: list[AgentRow]
    decode_p50: float | None
    slo: SloJudgement
    background: BackgroundSplit | None
    queue_wait: QueueWait | None
    client_cpu: ClientCpu


class GapErrors(BaseModel):
    """A replay's inter-arrival gaps against the original ones over --speed."""

    gaps: int = 0
    max_rel_error: float | None = None
    median_rel_error: float | None = None
    within_10pct: int = 0
    # gaps stretched because the session's previous answer ended after the request's
    # scheduled time (the engine slower than at capture): their error is the engine's
    held: int | None = None


class RunExtras(BaseModel):
    """What a stored summary holds beyond `AgentsSummary` (read from the results file; the
    rest of it is recomputed from the raw turns)."""

    model_config = ConfigDict(extra="ignore")

    engine_metrics: dict[str, int | float] = Field(default_factory=dict)
    prefix_reuse_metrics: float | None = None
    wall_s: float | None = None
    sessions: int | None = None
    gaps: GapErrors | None = None
    late_max_s: float | None = None


@dataclass(frozen=True)
class RunOutcome:
    """What an agents or replay run ends with: its summary, and what the run adds to it
    (only the extras it set are stored)."""

    summary: AgentsSummary
    extras: RunExtras


class RunMetrics(BaseModel):
    """One run's headline metrics (`flatten`): what an A/B, a sweep and tune compare. Read
    back from older files, any of them may be missing."""

    model_config = ConfigDict(extra="allow")

    goodput: float | None = None
    slo_met: bool | None = None
    ttft_p50_s: float | None = None
    ttft_p95_s: float | None = None
    ttft_p99_s: float | None = None
    ttft_p95_judged_s: float | None = None
    ttft_p95_during_background_s: float | None = None
    decode_p50: float | None = None
    reuse_after_first: float | None = None
    background_ttft_s: float | None = None
    background_prompt_tokens: int | None = None
    # the counts behind goodput, for its binomial (Clopper-Pearson) interval
    judged_turns: int | None = None
    good_turns: int | None = None
    slo_terms: dict[str, float | None] = Field(default_factory=dict)

    def judged_ttft_p95(self) -> float | None:
        """Judged TTFT p95; a file written before judged turns existed has only the p95."""
        if "ttft_p95_judged_s" in self.model_fields_set:
            return self.ttft_p95_judged_s
        return self.ttft_p95_s

    def value(self, key: str) -> float | None:
        """A headline metric by its key (an A/B row, a claim's metric)."""
        found = getattr(self, key, None)
        return None if found is None else float(found)
