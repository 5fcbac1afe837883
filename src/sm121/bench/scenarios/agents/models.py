"""The one model set of an agents or replay results file: its samples (the run's `RunConfig`
first, then one `TurnSample` per turn and one for the background job, the engine's gauges over
the run (`EngineGauges`, bench/gauges.py) and its `CapacityVerdict`), its summary
(`AgentsSummary`: TTFT percentiles overall, judged and by turn, per-agent decode, prefix reuse,
goodput against the SLO, the background job, gateway queue wait, the client's own CPU, and
what the run adds: engine deltas, wall time, a replay's gaps), and its headline metrics
(`RunMetrics`: what an A/B, a sweep and tune compare across runs). An A/B's or a sweep's file
holds the generic entries of `result_models`, in these models (`AgentsAb`, `AgentsSweep`).

Every model keeps keys it does not name and reads what older files lack as unset (so files
written before a field existed still read and render); field order is the file's key order."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from sm121.bench.gauges import EngineGauges
from sm121.bench.result_models import AbEntry, AbResults, Open, SweepEntry, SweepResults

# --- the samples -------------------------------------------------------------------------


class WorkloadRef(Open):
    """What a run reads of the workload its config record carries (the rest is kept)."""

    name: str | None = None
    slo_from_turn: int | None = None


class RunConfig(Open):
    """The run's first record: what it asked (agents, turns, the SLO) and how tools went."""

    kind: Literal["config"] = "config"
    workload: WorkloadRef | None = None
    agents: int | None = None
    slo: str | None = None
    api: str | None = None
    turns: int | None = None
    duration_s: float | None = None
    tools_mode: str | None = None
    tools_reason: str | None = None
    requests: int | None = None  # replay
    redacted: bool | None = None  # replay
    session_start: str | None = None  # together | stagger (None: together, older files)

    def first_judged_turn(self) -> int:
        """The first turn index the SLO judges (the workload's slo_from_turn; 0 for replays)."""
        workload = self.workload or WorkloadRef()
        if workload.slo_from_turn is not None:
            return workload.slo_from_turn
        return 0 if workload.name == "replay" else 1


class TurnSample(Open):
    """One turn as it ended (times in seconds since the run's t0), or the background job's
    request (`kind` "background", agent -1)."""

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
    # the gateway's session admission: how long this turn's session waited to be admitted
    # (X-Sm121-Session-Wait; 0 on a turn of an active session, None without that gateway)
    session_wait_s: float | None = None
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


class CapacityVerdict(Open):
    """What the run's engine counters say it ran out of, beside the capacity model's
    prediction for its N (bench/scenarios/agents/capacity.py, docs/capacity.md). Recorded
    as the run's last sample, so an A/B's or a sweep's entries carry it with their runs."""

    kind: Literal["capacity"] = "capacity"
    line: str
    resource: str | None = None  # KV, sequences, step budget, admission ...; None: met
    met: bool | None = None
    predicted: int | None = None  # the agents the pool holds (None: not known)
    binding: str | None = None
    pool_tokens: int | None = None
    pool_source: str | None = None  # where the pool was read: /metrics, a boot log, given
    working_set_tokens: int | None = None
    # the engine's gauges over the run (bench/gauges.py; None: not measured)
    kv_usage_peak: float | None = None
    waiting_peak: int | None = None
    running_peak: int | None = None
    # the scheduler settings the prediction read, from the run's profile (None: not known to
    # the run), so the record predicts again as it did (`bench report --slo`)
    max_num_seqs: int | None = None
    step_budget: int | None = None
    long_prefill_threshold: int | None = None
    kv_dtype: str | None = None
    # The engine's counter deltas over the run, as exported (what the verdict read), so the
    # record judges again on its own (`bench report --slo`): a sweep's entry keeps no summary.
    engine_metrics: dict[str, int | float] = Field(default_factory=dict)
    slo: str | None = None  # the SLO it was judged against
    # the judged misses by what each met first (memory/verdict.MissCause's values: evicted,
    # long prefill, cold start, queued); empty in a record from before it was kept
    miss_causes: dict[str, int] = Field(default_factory=dict)


AgentsSample = Annotated[RunConfig | TurnSample | EngineGauges | CapacityVerdict,
                         Field(discriminator="kind")]


class AgentsRun(BaseModel):
    """One run's records, sorted by kind: its config, its turns, its background job."""

    config: RunConfig
    turns: list[TurnSample]
    background: TurnSample | None = None
    bars: list[TurnSample] = []  # the turns and the background job in recorded order
    capacity: CapacityVerdict | None = None  # the run's verdict, once it ended
    gauges: EngineGauges | None = None  # the engine's gauges over the run (None: not sampled)


def read_run(samples: Sequence[BaseModel | dict[str, Any]]) -> AgentsRun:
    """A run's samples (as recorded, or as the results file holds them) sorted by kind;
    other kinds (a scenario's own records) are left out."""
    config: RunConfig | None = None
    bars: list[TurnSample] = []
    verdict: CapacityVerdict | None = None
    gauges: EngineGauges | None = None
    for sample in samples:
        record = sample.model_dump(exclude_unset=True) if isinstance(sample, BaseModel) \
            else sample
        kind = record.get("kind")
        if kind == "config" and config is None:
            config = RunConfig.model_validate(record)
        elif kind in ("turn", "background"):
            bars.append(TurnSample.model_validate(record))
        elif kind == "capacity":
            verdict = CapacityVerdict.model_validate(record)
        elif kind == "gauges":
            gauges = EngineGauges.model_validate(record)
    return AgentsRun(config=config or RunConfig(), turns=[b for b in bars if b.kind == "turn"],
                     background=next((b for b in bars if b.kind == "background"), None),
                     bars=bars, capacity=verdict, gauges=gauges)


# --- the summary -------------------------------------------------------------------------


class Percentiles(Open):
    p50: float | None = None
    p95: float | None = None
    p99: float | None = None


class QueueWait(Open):
    """The gateway's queue wait (the header each turn's reply carries)."""

    p50: float | None = None
    p95: float | None = None


class TurnRow(Open):
    """Turn index `turn` over every session: TTFT, prefix reuse, prompt size."""

    turn: int
    n: int
    ttft_p50_s: float | None = None
    ttft_p95_s: float | None = None
    ttft_p99_s: float | None = None
    reuse_mean: float | None = None
    reuse_min: float | None = None
    prompt_tokens_mean: float | None = None


class AgentRow(Open):
    agent: int
    turns: int
    decode_p50: float | None = None
    decode_p5: float | None = None
    ttft_p95_s: float | None = None


class SessionRow(Open):
    """One agent's session as the gateway's session admission treated it: when it started,
    how long it waited to be admitted, and its own goodput (judged turns meeting the SLO), so
    "the admitted sessions at full speed, the late ones waited" is not averaged away."""

    agent: int
    start_s: float | None = None  # its first turn's submission, since the run's t0
    first_ttft_s: float | None = None  # its first turn's TTFT: holds any wait to be admitted
    session_wait_s: float | None = None  # the gateway's word on that wait (summed over turns)
    judged: int | None = None
    good_turns: int | None = None
    goodput: float | None = None


class BackgroundSplit(Open):
    """The background job, and the judged turns that waited during its prefill or not."""

    prompt_tokens: int | None = None
    submitted: float | None = None
    first_token: float | None = None
    ttft_s: float | None = None
    turns_during: int = 0
    ttft_during: Percentiles = Field(default_factory=Percentiles)
    ttft_outside: Percentiles = Field(default_factory=Percentiles)


class Reuse(Open):
    mean: float | None = None
    min: float | None = None


class ClientCpu(Open):
    """The bench client's CPU during a turn (share of one core), so a busy client shows."""

    share_p50: float | None = None
    share_max: float | None = None
    cpu_s_p50: float | None = None


class TermJudgement(Open):
    """One SLO term over a run: the percentile observed, and how many turns meet it alone."""

    term: str
    metric: str | None = None  # None: a file from before the term's parts were kept
    q: float | None = None
    threshold: float | None = None
    observed: float | None = None
    met: bool = False
    turns_meeting: int = 0


class SloJudgement(Open):
    """The run against its SLO: goodput (the share of judged turns meeting every term), the
    counts behind it, and whether every term's percentile meets its threshold."""

    slo: str
    terms: list[TermJudgement] = Field(default_factory=list)
    turns: int = 0
    good_turns: int = 0
    goodput: float | None = None
    met: bool = False


class GapErrors(Open):
    """A replay's inter-arrival gaps against the original ones over --speed."""

    gaps: int = 0
    max_rel_error: float | None = None
    median_rel_error: float | None = None
    within_10pct: int = 0
    # gaps stretched because the session's previous answer ended after the request's
    # scheduled time (the engine slower than at capture): their error is the engine's
    held: int | None = None


class AgentsSummary(Open):
    """A run's summary (`summary.summarize_run`), then what the run adds (engine deltas, wall
    time, a replay's gaps). A file cut short has none (`{}`): every field reads as unset."""

    workload: str | None = None
    agents: int | None = None
    tools_mode: str | None = None
    turns: int = 0
    usage_checked: int = 0
    prompt_exact: int = 0
    # Messages/Responses: turns whose content events equal usage's tokens (None on chat)
    events_match_usage: int | None = None
    ttft: Percentiles = Field(default_factory=Percentiles)
    judged_from_turn: int = 1
    ttft_judged: Percentiles = Field(default_factory=Percentiles)
    by_turn: list[TurnRow] = Field(default_factory=list)
    reuse_after_first: Reuse = Field(default_factory=Reuse)
    per_agent: list[AgentRow] = Field(default_factory=list)
    # set only for runs through a gateway with session admission, or with staggered starts
    per_session: list[SessionRow] | None = None
    decode_p50: float | None = None
    slo: SloJudgement | None = None  # None: the run has no verdict yet
    background: BackgroundSplit | None = None
    queue_wait: QueueWait | None = None
    client_cpu: ClientCpu = Field(default_factory=ClientCpu)
    # what the run adds to the summary of its turns (only those it set are stored)
    engine_metrics: dict[str, int | float] = Field(default_factory=dict)
    prefix_reuse_metrics: float | None = None
    wall_s: float | None = None
    sessions: int | None = None
    gaps: GapErrors | None = None
    late_max_s: float | None = None
    gauges: EngineGauges | None = None  # their peaks (the series is the run's gauges sample)
    capacity: CapacityVerdict | None = None


# --- across runs -------------------------------------------------------------------------


class RunMetrics(Open):
    """One run's headline metrics (`flatten`): what an A/B, a sweep and tune compare. Read
    back from older files, any of them may be missing; `{}` is a run that measured nothing."""

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
    # the run's capacity verdict (docs/capacity.md): its line and the resource it names
    verdict: str | None = None
    verdict_resource: str | None = None
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


# An A/B's and a sweep's entries and files in these models (`result_models` generics).
AgentsAbEntry = AbEntry[AgentsSample, RunMetrics]
AgentsSweepEntry = SweepEntry[AgentsSample, RunMetrics]
AgentsAb = AbResults[AgentsSample, RunMetrics]
AgentsSweep = SweepResults[AgentsSample, RunMetrics]


def bars(entry: AbEntry[Any, Any] | SweepEntry[Any, Any]) -> list[TurnSample]:
    """An entry's turns and background job, in recorded order."""
    return read_run(entry.samples).bars


def stored_summary(entry: AgentsAbEntry) -> AgentsSummary:
    """What an A/B entry keeps of its run's summary, in the summary's model."""
    return AgentsSummary.model_validate(entry.summary.to_json())

