"""The cold start as a resource of the capacity model: the adapter from the model's types
(session shape, knobs) to the plain numbers of memory/cold_start.py, and its allowance
(docs/capacity.md, "The cold start").

The cold start's own model takes plain numbers so it can be checked by hand and against every
committed run (benchmarks/cold_start.py); this module is where a workload and a profile become
those numbers, and where its answer becomes an allowance. Pure, no I/O.
"""

from __future__ import annotations

from sm121.memory import cold_start as cold
from sm121.memory.capacity_types import Allowance, Knobs, Resource, SessionShape
from sm121.memory.cold_start import ColdStartCost, ColdStartInputs, FreshRate


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
