"""The allowances of the resources counted by plain arithmetic: KV, sequences, the step budget
and admission during the long prefill (docs/capacity.md, "The model"). Each says how many agents
its resource allows on its own and the arithmetic, or why that is not known.

Kept apart from the prediction that gathers them (memory/capacity.py) so that each resource's
rule reads on its own; the long job's window and the cold start, whose models are larger, have
their own modules (long_job_window_allowance.py, cold_start_allowance.py). Pure, no I/O.
"""

from __future__ import annotations

import math

from sm121.memory.capacity_types import Allowance, Knobs, Pool, Resource, SessionShape, Throughput
from sm121.memory.working_set import blocks_for, sessions_that_fit

# Share of the engine's measured throughput the agents may ask for before queueing pushes their
# turns' TTFT past the SLO (an M/D/1-like queue's wait grows fast past 0.8): an assumption, said
# in every result that uses it.
STEP_UTILISATION = 0.8


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
