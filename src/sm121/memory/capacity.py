"""How many agents a pool, a profile and a workload allow, and which resource binds.

Each resource counted on its own, the smallest binds (DOMAIN.md, "Agent capacity is a
memory question first"):
- KV: every session's working set (its context at its last turn, in blocks) must stay in the
  pool between its turns, beside what long jobs hold for the whole run. Past that, idle
  sessions' prefixes are evicted, every turn re-prefills its whole context, preemptions start
  and all sessions slow down together. A one-shot background job holds its blocks only while
  it runs: past `(pool - job) / context` agents, idle prefixes are evicted during it. What
  that costs the SLO is its own resource, the long job's window (memory/long_job_window.py):
  the turns that return to an evicted prefix while the job's blocks grow, each re-prefilling
  beside the job's chunks; known where the job's prefill rate at its depth is given (the H100
  held 16 agents at 100%, its reuse dipping to 49% during the job, and missed from 18).
- sequences: max-num-seqs less the long jobs' own sequences (an agent has one request in
  flight at a time), and the gateway's in-flight cap where one is set.
- the step budget: what the agents' turns (new tokens plus the reply) ask of the engine per
  second against what it serves beside the long job's chunk, from a throughput figure measured
  at the workload's depth; and admission during the long prefill, which without a per-request
  threshold below the step budget waits for the whole prefill. Without a measured figure the
  model says "not known" rather than guess.
- the cold start: every session's first prompt sent at once, the second turns queued behind
  those still waiting (memory/cold_start.py); known where the engine's prefill rate for fresh
  prompts of that length is given (the H100 baseline's 17 agents missed with 3 of its 4
  misses there, the H200's chunk-2048 arms at 28 with all 10).

The model takes plain numbers: the CLI and bench read them from the workload preset
(memory/ must not import bench/). Pure, no I/O.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from enum import StrEnum

from sm121.memory import cold_start as cold
from sm121.memory import long_job_window as window
from sm121.memory.cold_start import ColdStartCost, ColdStartInputs, FreshRate
from sm121.memory.long_job_window import JobRate, WindowCost, WindowInputs
from sm121.memory.working_set import WorkingSet, blocks_for, sessions_that_fit

# Share of the engine's measured throughput the agents may ask for before queueing pushes their
# turns' TTFT past the SLO (an M/D/1-like queue's wait grows fast past 0.8): an assumption, said
# in every result that uses it.
STEP_UTILISATION = 0.8


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


@dataclass(frozen=True)
class Capacity:
    """The prediction: the agents each resource allows, the binding one and the margin."""

    workload: str
    pool: Pool | None  # None: not known (the KV allowance is not known)
    working_set_tokens: int
    working_set_blocks: int | None
    allowances: tuple[Allowance, ...]
    predicted: int | None  # the smallest known allowance; None: none is known
    binding: Resource | None
    unknown: tuple[Resource, ...]  # allowances not known: the prediction is an upper bound
    transient_from: int | None  # past this many agents the long job's window evicts prefixes
    agents: int | None = None  # the N asked about, if any
    slo_ttft_s: float | None = None
    kv_dtype: str | None = None  # the profile's kv-cache-dtype (None: the model's dtype)
    window: WindowCost | None = None  # what the long job's window costs the N asked about
    window_arithmetic: str | None = None  # what an evicted turn costs, said under the allowances
    cold_start: ColdStartCost | None = None  # what the cold start costs the N asked about
    cold_start_arithmetic: str | None = None  # how the first prompts prefill, said likewise
    # the working set's first prompt as counted (None: the longest session, a bound), and how
    first_prompt_tokens: int | None = None
    prefix_source: str | None = None

    @property
    def margin(self) -> int | None:
        """Agents to spare at the N asked about (negative: short by that many)."""
        if self.agents is None or self.predicted is None:
            return None
        return self.predicted - self.agents

    def allowance(self, resource: Resource) -> Allowance:
        return next(a for a in self.allowances if a.resource is resource)

    def headline(self) -> str:
        if self.predicted is None or self.binding is None:
            return (f"how many agents of {self.workload} this profile holds is not known: "
                    "no resource's allowance is")
        bound = "at most" if self.unknown else "about"
        line = (f"holds {bound} {self.predicted} agents of {self.workload} "
                f"({self.binding.value} binds: {self.allowance(self.binding).how})")
        if self.agents is not None:
            margin = self.margin or 0
            line += (f"; {self.agents} asked: {margin} to spare" if margin >= 0
                     else f"; {self.agents} asked: {-margin} too many")
        return line

    def lines(self) -> list[str]:
        out = [self.headline()]
        for a in self.allowances:
            count = ("no limit of its own" if not a.limits else "not known"
                     if a.agents is None else f"allows {a.agents}")
            out.append(f"{a.resource.value}: {count}: {a.how}")
        if self.window_arithmetic:
            out.append(f"the long job's window: {self.window_arithmetic}")
        if self.cold_start_arithmetic:
            out.append(f"the cold start: {self.cold_start_arithmetic}")
        if self.transient_from is not None and not any(
                a.resource is Resource.LONG_JOB_WINDOW for a in self.allowances):
            out.append(f"past {self.transient_from} agents the long job's own blocks evict idle "
                       "prefixes while it runs: each evicted session re-prefills one turn (a "
                       "transient, not counted as the cliff: whether the SLO absorbs it is "
                       "measured, not modelled)")
        if self.binding is Resource.KV and self.pool is not None:
            fp8 = "" if (self.kv_dtype or "").startswith("fp8") else (
                f", kv-cache-dtype fp8 (half the bytes a token: about "
                f"{sessions_that_fit(2 * self.pool.blocks, 0, self.working_set_blocks or 1)} "
                "agents, where the engine supports it)")
            out.append(f"KV levers: a larger pool (GMU, more nodes){fp8}")
        if self.unknown:
            out.append("the prediction is an upper bound: " + ", ".join(
                r.value for r in self.unknown) + " not known")
        return out


def first_prompt_note(shape: SessionShape) -> str:
    """Where the working set's first prompt came from, as its pool's source is said."""
    if shape.prefix_source is None:
        return ""
    if shape.first_prompt_tokens is None:
        return f"; {shape.prefix_source}"
    return f"; first prompt {shape.first_prompt_tokens:,} tokens, {shape.prefix_source}"


def kv_allowance(pool: Pool | None, shape: SessionShape) -> tuple[Allowance, int | None]:
    """KV: (pool - resident long jobs) / working set, in blocks; and where the one-shot job's
    window starts evicting (None: no job)."""
    if pool is None:
        return Allowance(Resource.KV, None, f"{shape.last_context_tokens:,} tokens per "
                         "session, but the pool in tokens is not known (no bytes per token for "
                         "this model here: give --pool-tokens, --boot-log or --engine-url)"), None
    per = shape.working_set().blocks(pool.block_size)
    resident = blocks_for(shape.resident_long_tokens, pool.block_size)
    n = sessions_that_fit(pool.blocks, resident, per)
    held = f" - {shape.resident_long_tokens:,} held by long jobs" if resident else ""
    how = (f"{pool.tokens:,} tokens{held} / {shape.last_context_tokens:,} per session "
           f"= {pool.blocks:,}{f' - {resident:,}' if resident else ''} / {per:,} blocks of "
           f"{pool.block_size}; pool from {pool.source}{first_prompt_note(shape)}")
    transient = None
    if shape.long_job_tokens:
        job = blocks_for(shape.long_job_tokens, pool.block_size)
        transient = sessions_that_fit(pool.blocks, resident + job, per)
    return Allowance(Resource.KV, n, how), transient


def sequence_allowance(shape: SessionShape, knobs: Knobs) -> Allowance:
    jobs = 1 if shape.long_job_tokens else 0
    if knobs.max_num_seqs is None:
        return Allowance(Resource.SEQUENCES, None, "max-num-seqs not set (the engine's "
                         "default depends on the device)")
    n = knobs.max_num_seqs - jobs
    how = f"max-num-seqs {knobs.max_num_seqs}" + (" less the long job's one" if jobs else "")
    if knobs.inflight_cap is not None and knobs.inflight_cap - jobs < n:
        n = knobs.inflight_cap - jobs
        how = f"the gateway's in-flight cap {knobs.inflight_cap}" + (
            " less the long job's one" if jobs else "")
    return Allowance(Resource.SEQUENCES, max(0, n), how)


def _long_step_share(shape: SessionShape, knobs: Knobs, budget: int) -> int:
    """Tokens of each step the long prefill takes while it runs, when a threshold under the
    budget caps it; without one the prefill takes every step, which admission counts (a turn
    waits for the whole prefill), and the budget is the agents' outside it."""
    threshold = knobs.long_prefill_threshold or 0
    if not shape.long_job_tokens or threshold <= 0 or threshold >= budget:
        return 0
    return threshold


def admission_allowance(shape: SessionShape, knobs: Knobs, rate: Throughput | None,
                        slo_ttft_s: float | None) -> Allowance | None:
    """During the long prefill, without a threshold under the step budget, vLLM schedules the
    running prefill first and a turn waits for all of it. None: no limit of its own (no long
    job; a threshold under the step budget, whose share the step budget counts; or a prefill
    short enough to wait for)."""
    if not shape.long_job_tokens:
        return None
    budget = knobs.step_budget or 0
    if budget and 0 < (knobs.long_prefill_threshold or 0) < budget:
        return None
    if rate is None or slo_ttft_s is None:
        return Allowance(Resource.ADMISSION, None, "no threshold under the step budget: a turn "
                         "that meets the long prefill waits for it; how long is not known "
                         "without a throughput figure")
    wait = shape.long_job_tokens / rate.prefill_tok_s
    if wait <= slo_ttft_s:
        return None
    return Allowance(Resource.ADMISSION, 0, f"no threshold under the step budget: a turn that "
                     f"meets the {shape.long_job_tokens:,}-token prefill waits about {wait:.1f} "
                     f"s ({rate.prefill_tok_s:,.0f} tok/s, {rate.source}) against the SLO's "
                     f"{slo_ttft_s:g} s")


def step_allowance(shape: SessionShape, knobs: Knobs, rate: Throughput | None) -> Allowance:
    """The agents' token demand against what the engine serves them beside the long job."""
    budget = knobs.step_budget
    if rate is None or budget is None:
        return Allowance(Resource.STEP_BUDGET, None, "no throughput figure at the workload's "
                         "depth for this step budget (a calibration boot or --prefill-tok-s "
                         "and --decode-tok-s give it)")
    share = budget - _long_step_share(shape, knobs, budget)
    supply = rate.prefill_tok_s * share / budget
    cycle = shape.think_time_s + shape.reply_tokens / rate.decode_tok_s
    per_agent = (shape.turn_new_tokens + shape.reply_tokens) / cycle
    n = math.floor(STEP_UTILISATION * supply / per_agent) if supply > 0 else 0
    steps = (f"{share} of {budget} tokens a step while the long job runs" if share < budget
             else f"steps of {budget} tokens")
    return Allowance(Resource.STEP_BUDGET, n, (
        f"{STEP_UTILISATION:.0%} of {supply:,.0f} tok/s ({steps}, {rate.source}) / "
        f"{per_agent:,.0f} tok/s per agent "
        f"({shape.turn_new_tokens + shape.reply_tokens:,.0f} tokens a turn every {cycle:.2f} s)"))


def _job_takes_chunks(shape: SessionShape, knobs: Knobs) -> bool:
    """A one-shot job whose steps a threshold under the budget caps (else it takes whole
    steps, and admission during the long prefill counts that)."""
    threshold, budget = knobs.long_prefill_threshold or 0, knobs.step_budget or 0
    return bool(shape.long_job_tokens) and threshold > 0 and not (budget and threshold >= budget)


def window_inputs(pool: Pool, shape: SessionShape, threshold: int, job_rate: JobRate,
                  slo_ttft_s: float) -> tuple[WindowInputs, str]:
    """The long job's window as plain numbers, and how a session's context at its end was
    counted."""
    w = WindowInputs(
        pool_tokens=pool.tokens - shape.resident_long_tokens,
        job_tokens=shape.long_job_tokens or 0, context_tokens=shape.last_context_tokens,
        threshold=threshold, reply_tokens=shape.reply_tokens, think_time_s=shape.think_time_s,
        judged_turns=max(0, shape.turns - shape.slo_from_turn), slo_ttft_s=slo_ttft_s,
        rate=job_rate)
    if shape.first_prompt_tokens is None:
        # no engine counted the first prompt: every session at its largest, a bound that errs
        # low as the KV allowance's does (the nominal first prompt leaves out the tools'
        # schemas, so the expected context would undercount the deficit)
        return w, "every session at its largest (no engine counted the first prompt)"
    # the job starts once every agent finished its first turn; while it runs (job / threshold
    # steps) an agent makes a turn every cycle_steps steps
    done = min(shape.turns - 1, 1 + w.job_tokens / threshold / w.cycle_steps)
    context = shape.last_context_tokens - (shape.turns - 1 - done) * shape.growth_per_turn_tokens
    return replace(w, context_tokens=context), f"after about {done:.1f} turns"


def window_allowance(pool: Pool | None, shape: SessionShape, knobs: Knobs,
                     job_rate: JobRate | None, slo_ttft_s: float | None, agents: int | None
                     ) -> tuple[Allowance | None, WindowCost | None, str | None]:
    """The most agents whose long job's window leaves goodput at the target (agents None:
    not known, or no limit of its own), its cost at `agents`, and the arithmetic; None where
    no one-shot job takes chunks of the steps."""
    if not _job_takes_chunks(shape, knobs):
        return None, None, None
    missing = ("the pool" if pool is None else "the long job's prefill rate at its depth "
               "under its threshold (--job-prefill-tok-s)" if job_rate is None else
               "an SLO with a TTFT term")
    if pool is None or job_rate is None or slo_ttft_s is None:
        return Allowance(Resource.LONG_JOB_WINDOW, None, (
            f"the {shape.long_job_tokens or 0:,}-token job's blocks evict idle prefixes while "
            f"it runs; what that costs the SLO is not known without {missing}")), None, None
    w, context_note = window_inputs(pool, shape, knobs.long_prefill_threshold or 0, job_rate,
                                    slo_ttft_s)
    at = None if agents is None else window.cost(w, agents)
    where, arithmetic = window.describe(w, context_note)
    how = where + ("" if at is None else (
        f"; at {agents}: about {at.misses:.1f} of {at.judged} judged turns over the SLO "
        f"(goodput {at.goodput:.0%})"))
    first = window.binds_from(w)
    if first is None:
        return Allowance(Resource.LONG_JOB_WINDOW, None, how, limits=False), at, arithmetic
    return Allowance(Resource.LONG_JOB_WINDOW, first - 1,
                     f"misses the goodput target from {first}: {how}"), at, arithmetic


def cold_start_inputs(shape: SessionShape, knobs: Knobs, fresh: FreshRate,
                      slo_ttft_s: float) -> ColdStartInputs | None:
    """The cold start as plain numbers; None where the first prompt was not counted or the
    step budget is not set."""
    if shape.first_prompt_tokens is None or knobs.step_budget is None:
        return None
    return ColdStartInputs(
        first_prompt_tokens=shape.first_prompt_tokens,
        shared_tokens=0,  # bench agents salts each session's system prompt at its start
        step_budget=knobs.step_budget, threshold=knobs.long_prefill_threshold,
        reply_tokens=shape.reply_range or (shape.reply_tokens, shape.reply_tokens),
        think_time_s=shape.think_range or (shape.think_time_s, shape.think_time_s),
        slo_ttft_s=slo_ttft_s, judged_turns=max(0, shape.turns - shape.slo_from_turn),
        second_turn_judged=shape.turns >= 2 and shape.slo_from_turn <= 1, rate=fresh)


def cold_start_allowance(shape: SessionShape, knobs: Knobs, fresh: FreshRate | None,
                         slo_ttft_s: float | None, agents: int | None
                         ) -> tuple[Allowance, ColdStartCost | None, str | None]:
    """The most agents whose cold start leaves goodput at the target (None: not known, or no
    limit of its own), its cost at `agents`, and the arithmetic."""
    if shape.turns < 2 or shape.slo_from_turn > 1:
        return Allowance(Resource.COLD_START, None, "the SLO judges no second turn (the turns "
                         "that queue behind the first prompts)", limits=False), None, None
    missing = ("a first prompt an engine counted (--engine-url)"
               if shape.first_prompt_tokens is None else
               "the step budget (max-num-batched-tokens is the engine's default)"
               if knobs.step_budget is None else
               "the engine's prefill rate for fresh prompts of the first prompt's length at "
               "this step budget (--cold-prefill-tok-s)" if fresh is None else
               "an SLO with a TTFT term")
    inputs = None if fresh is None or slo_ttft_s is None else \
        cold_start_inputs(shape, knobs, fresh, slo_ttft_s)
    if inputs is None:
        return Allowance(Resource.COLD_START, None, (
            "every session's first prompt is sent at once and second turns queue behind those "
            f"still waiting; what that costs the SLO is not known without {missing}")), None, None
    at = None if agents is None else cold.cost(inputs, agents)
    arithmetic = cold.describe(inputs)
    said = "" if at is None else (
        f"at {agents}: about {at.misses:.1f} of {at.judged} judged turns over the SLO (goodput "
        f"{at.goodput:.0%}), second turns admitted from {at.release_s:.1f} s")
    first = cold.binds_from(inputs)
    if first is None:
        return Allowance(Resource.COLD_START, None, said or "a second turn's wait never costs "
                         "the target's share", limits=False), at, arithmetic
    return Allowance(Resource.COLD_START, first - 1, f"misses the goodput target from {first}"
                     + (f"; {said}" if said else "")), at, arithmetic


def predict(pool: Pool | None, shape: SessionShape, knobs: Knobs, rate: Throughput | None = None,
            slo_ttft_s: float | None = None, agents: int | None = None,
            job_rate: JobRate | None = None, fresh_rate: FreshRate | None = None) -> Capacity:
    """The agents each resource allows; the smallest known one is the prediction.
    `fresh_rate`: the engine's prefill rate for fresh prompts of about the first prompt's
    length at this step budget (what the cold start costs)."""
    kv, transient = kv_allowance(pool, shape)
    found = [kv, sequence_allowance(shape, knobs), step_allowance(shape, knobs, rate)]
    if (admission := admission_allowance(shape, knobs, rate, slo_ttft_s)) is not None:
        found.append(admission)
    window_allows, window_cost, arithmetic = window_allowance(pool, shape, knobs, job_rate,
                                                              slo_ttft_s, agents)
    if window_allows is not None:
        found.append(window_allows)
    cold_allows, cold_cost, cold_arithmetic = cold_start_allowance(shape, knobs, fresh_rate,
                                                                   slo_ttft_s, agents)
    found.append(cold_allows)
    known = [a for a in found if a.agents is not None]
    bind = min(known, key=lambda a: a.agents or 0) if known else None
    return Capacity(
        workload=shape.workload, pool=pool, working_set_tokens=shape.last_context_tokens,
        working_set_blocks=None if pool is None else shape.working_set().blocks(pool.block_size),
        allowances=tuple(found), predicted=None if bind is None else bind.agents,
        binding=None if bind is None else bind.resource,
        unknown=tuple(a.resource for a in found if a.agents is None and a.limits),
        transient_from=transient if transient is not None and transient < (kv.agents or 0)
        else None, agents=agents, slo_ttft_s=slo_ttft_s, kv_dtype=knobs.kv_dtype,
        window=window_cost, window_arithmetic=arithmetic, cold_start=cold_cost,
        cold_start_arithmetic=cold_arithmetic,
        first_prompt_tokens=shape.first_prompt_tokens, prefix_source=shape.prefix_source)


def pool_for_agents(agents: int, shape: SessionShape, block_size: int) -> int:
    """The pool in tokens that holds `agents` sessions' working sets and the resident jobs
    (the KV lever's target: GMU, kv-cache-dtype, nodes)."""
    per = shape.working_set().blocks(block_size)
    return (agents * per + blocks_for(shape.resident_long_tokens, block_size)) * block_size


def first_probes(predicted: int, most: int | None = None) -> tuple[int, int]:
    """The two agent counts a capacity search tests first around a prediction of `predicted`
    agents held: about 0.9x (which should meet) and about 1.1x, at least one past it (which
    should miss); a search bisects only where the measurement disagrees."""
    below = max(1, min(predicted, math.floor(0.9 * predicted)))
    above = max(predicted + 1, math.ceil(1.1 * predicted))
    if most is not None:
        above = min(above, most)
        below = min(below, max(1, above - 1))
    return below, above


def smaller_pool(tuned_pool_tokens: int, tuned_device: str, tuned_agents: int | None,
                 pool_tokens: int) -> str | None:
    """The warning when the pool at hand is smaller than the one a tuned profile was measured
    on (an H200 profile on an H100): the agents it held scale down with the pool, when KV
    binds. None when the pool at hand is as large."""
    if pool_tokens >= tuned_pool_tokens:
        return None
    share = pool_tokens / tuned_pool_tokens
    held = f" (it held {tuned_agents} agents there)" if tuned_agents is not None else ""
    return (f"this profile was tuned on {tuned_device} with a KV pool of {tuned_pool_tokens:,} "
            f"tokens{held}; the pool here is {pool_tokens:,}, {share:.0%} of it: where KV binds "
            f"it holds {share:.0%} as many sessions (sm121 plan --workload says how many)")
