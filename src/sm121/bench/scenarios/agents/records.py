"""The raw records of an agents or replay run, typed: one `TurnSample` per turn (and one for
the background job), and the run's `RunConfig`. The results file keeps them as dicts (the
JSON edge): `to_record` writes one, `read_run` reads a run's list back. Unknown keys are kept,
so a replay's own fields (session, scheduled_s, ...) and older files round-trip unchanged."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict


class TurnSample(BaseModel):
    """One turn as it ended (times in seconds since the run's t0), or the background job's
    request (`kind` "background", agent -1)."""

    model_config = ConfigDict(extra="allow")

    kind: Literal["turn", "background"] = "turn"
    agent: int = 0
    conversation: int = 0
    turn: int = 0
    submitted: float = 0.0
    first_token: float | None = None
    finished: float | None = None
    ttft_s: float | None = None
    e2e_s: float | None = None
    completion_tokens: int | None = None
    usage_checked: bool | None = None
    events_match_usage: bool | None = None
    prompt_tokens: int | None = None
    cached_tokens: int | None = None
    reuse: float | None = None
    queue_wait_s: float | None = None
    finish_reason: str | None = None
    decode_tok_s: float | None = None
    itl_p50_s: float | None = None
    itl_p95_s: float | None = None
    expected_prompt_tokens: int | None = None
    output_asked: int | None = None
    prompt_exact: bool | None = None
    tool_calls: int | None = None
    paste: bool | None = None
    client_cpu_s: float | None = None
    client_cpu_share: float | None = None
    # a replay's turn: the gaps it replays (the rest of its fields stay as extras)
    late_s: float | None = None
    held_s: float | None = None  # of late_s, the wait for the session's previous answer
    wanted_gap_s: float | None = None
    replay_gap_s: float | None = None

    def metric(self, key: str) -> float | None:
        """A per-turn metric by its record key (an SLO term names the key it judges)."""
        value = getattr(self, key, None)
        return None if value is None else float(value)

    def to_record(self) -> dict[str, Any]:
        """The results file's dict: the keys this turn was given, nothing defaulted."""
        return self.model_dump(exclude_unset=True)


class WorkloadRef(BaseModel):
    """What the summary reads of the workload a config record carries (the rest is kept)."""

    model_config = ConfigDict(extra="allow")

    name: str | None = None
    slo_from_turn: int | None = None


class RunConfig(BaseModel):
    """The run's config record: what it asked (agents, turns, the SLO) and how tools went."""

    model_config = ConfigDict(extra="allow")

    kind: Literal["config"] = "config"
    workload: WorkloadRef | None = None
    agents: int | None = None
    turns: int | None = None
    slo: str | None = None
    tools_mode: str | None = None

    def first_judged_turn(self) -> int:
        """The first turn index the SLO judges (the workload's slo_from_turn; 0 for replays)."""
        workload = self.workload or WorkloadRef()
        if workload.slo_from_turn is not None:
            return workload.slo_from_turn
        return 0 if workload.name == "replay" else 1


class AgentsRun(BaseModel):
    """One run's records, sorted by kind: its config, its turns, its background job."""

    config: RunConfig
    turns: list[TurnSample]
    background: TurnSample | None = None
    bars: list[TurnSample] = []  # the turns and the background job in recorded order


def read_run(samples: list[dict[str, Any]]) -> AgentsRun:
    """A run's raw sample list (from the results file) as typed records; other kinds
    (a scenario's own records) are left out."""
    config: RunConfig | None = None
    bars: list[TurnSample] = []
    for sample in samples:
        kind = sample.get("kind")
        if kind == "config" and config is None:
            config = RunConfig.model_validate(sample)
        elif kind in ("turn", "background"):
            bars.append(TurnSample.model_validate(sample))
    return AgentsRun(config=config or RunConfig(), turns=[b for b in bars if b.kind == "turn"],
                     background=next((b for b in bars if b.kind == "background"), None),
                     bars=bars)
