"""The long job's window as a resource of the capacity model: the adapter from the model's
types (pool, session shape, knobs) to the plain numbers of memory/long_job_window.py, and its
allowance (docs/capacity.md, "The long job's window").

The window's own model takes plain numbers so it can be checked by hand and against every
committed run (benchmarks/long_job_window.py); this module is where a workload and a profile
become those numbers, and where its answer becomes an allowance. Pure, no I/O.
"""

from __future__ import annotations

from dataclasses import replace

from sm121.memory import long_job_window as window
from sm121.memory.capacity_types import Allowance, Knobs, Pool, Resource, SessionShape
from sm121.memory.long_job_window import JobRate, WindowCost, WindowInputs


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
