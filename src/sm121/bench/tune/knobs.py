"""The recipe's engine as tune asks it (its adapter: the scheduler knobs tune varies, by its
names for them, its memory flags, its label and flag lists), the engine-defaults arm's name,
and the step a long prefill gets under a set of knobs."""

from __future__ import annotations

from collections.abc import Mapping

from sm121.bench.tune.candidates import defaults_arm
from sm121.engines.adapter import EngineAdapter, SchedulerFlags
from sm121.engines.registry import adapter_for
from sm121.recipes.schema import EngineKind


def engine_of(kind: EngineKind) -> EngineAdapter:
    """The recipe's engine: its scheduler knobs, its memory flags (where its context is split
    across the sequences, tune's arms raise it with them; the KV dtype and its fp8 value, what
    moves the pool), its label and its flag lists."""
    return adapter_for(kind)


def defaults_of(kind: EngineKind) -> str:
    """The name of the arm that sets none of the engine's knobs."""
    return defaults_arm(kind.value)


def effective_step(args: Mapping[str, object], knobs: SchedulerFlags) -> int | None:
    """Tokens a long prefill gets per step: the chunk, capped by the threshold when set (an
    engine without a threshold gives a long prefill the whole chunk)."""
    chunk = args.get(knobs.batched_tokens)
    threshold = args.get(knobs.long_prefill_threshold) if knobs.long_prefill_threshold else None
    sizes = [int(v) for v in (chunk, threshold) if isinstance(v, int | str) and str(v).isdigit()
             and int(v) > 0]
    return min(sizes) if sizes else None
