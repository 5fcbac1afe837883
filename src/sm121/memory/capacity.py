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
(memory/ must not import bench/). This module holds the prediction and gathers it; the types
are in memory/capacity_types.py, the allowances of KV, sequences, the step budget and admission
in memory/allowances.py, the long job's window's and the cold start's beside their models
(memory/long_job_window_allowance.py, cold_start_allowance.py). Pure, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

from sm121.memory.allowances import (
    admission_allowance,
    kv_allowance,
    sequence_allowance,
    step_allowance,
)
from sm121.memory.capacity_types import Allowance, Knobs, Pool, Resource, SessionShape, Throughput
from sm121.memory.cold_start import ColdStartCost, FreshRate
from sm121.memory.cold_start_allowance import cold_start_allowance
from sm121.memory.long_job_window import JobRate, WindowCost
from sm121.memory.long_job_window_allowance import window_allowance
from sm121.memory.working_set import sessions_that_fit


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
