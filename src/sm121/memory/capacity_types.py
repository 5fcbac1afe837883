"""The capacity model's vocabulary: the resources that bound how many agents a profile holds,
what the model reads to count them (the KV pool, the workload's session shape, the profile's
scheduler knobs, a throughput figure), and what one resource answers (its allowance).

Each resource's allowance (memory/allowances.py, long_job_window_allowance.py,
cold_start_allowance.py) and the prediction that gathers them (memory/capacity.py) all speak
these types, so they sit below every one of them. Plain numbers: the CLI and bench read them
from the workload preset (memory/ must not import bench/). Pure, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from sm121.memory.working_set import WorkingSet


class Resource(StrEnum):
    KV = "KV"
    SEQUENCES = "sequences"
    STEP_BUDGET = "step budget"
    ADMISSION = "admission during the long prefill"
    LONG_JOB_WINDOW = "the long job's window"
    COLD_START = "the cold start"


@dataclass(frozen=True)
class Pool:
    """The engine's KV pool: from vLLM's /metrics, a boot log, the planner, or given."""

    tokens: int
    block_size: int
    source: str  # said in the result: "vLLM's /metrics", "boot log ...", "the planner", "given"

    @property
    def blocks(self) -> int:
        return self.tokens // self.block_size


@dataclass(frozen=True)
class SessionShape:
    """The workload's facts the model needs, as plain numbers (read from a preset by the caller)."""

    workload: str
    turns: int
    # a session's context after its last turn, on average (the expected session, not the
    # longest): its working set
    last_context_tokens: int
    growth_per_turn_tokens: float  # what one turn adds on average (new input, reply, template)
    turn_new_tokens: float  # what a turn prefills when its prefix is cached (mean)
    reply_tokens: float  # a turn's reply (mean)
    think_time_s: float  # between a reply and the next turn (mean)
    long_job_tokens: int | None = None  # a one-shot background job's prompt, None: no job
    resident_long_tokens: int = 0  # long jobs held for the whole run (none in the presets)
    first_prompt_tokens: int | None = None  # a session's first prompt, as counted
    prefix_source: str | None = None  # how the first prompt was counted (said in the result)
    slo_from_turn: int = 1  # the SLO judges turns from this one on (the presets' 1)
    # a turn's reply and think time as the uniform ranges they are drawn from (None: the mean,
    # fixed); the cold start's second turns go out at their spread, not their mean
    reply_range: tuple[float, float] | None = None
    think_range: tuple[float, float] | None = None

    def working_set(self) -> WorkingSet:
        return WorkingSet(prompt_tokens=self.last_context_tokens)


@dataclass(frozen=True)
class Knobs:
    """The profile's scheduler settings the model reads (None: the engine's default)."""

    max_num_seqs: int | None
    step_budget: int | None  # max-num-batched-tokens
    long_prefill_threshold: int | None  # long-prefill-token-threshold; None or 0: none
    inflight_cap: int | None = None  # the gateway's in-flight cap, where one is set
    kv_dtype: str | None = None  # said in the result (the lever: fp8 halves a working set)


@dataclass(frozen=True)
class Throughput:
    """The engine's prefill throughput at this step budget, measured at the workload's depth
    (the knee is short-context: DOMAIN.md prices a prefill at its own depth), and one stream's
    decode rate under load. A calibration figure: it calibrates only the stack it came from."""

    prefill_tok_s: float
    decode_tok_s: float
    source: str


@dataclass(frozen=True)
class Allowance:
    resource: Resource
    agents: int | None  # None: not known, or no limit of its own (limits False)
    how: str  # the arithmetic, or why it is not known
    limits: bool = True  # False: the resource sets no limit at any N (known, not binding)

