"""The scheduler knobs tune varies, asked of the recipe's engine adapter (its names for
them), and the step a long prefill gets under a set of them."""

from __future__ import annotations

from collections.abc import Mapping

from sm121.engines.adapter import SchedulerFlags
from sm121.engines.registry import adapter_for
from sm121.recipes.schema import EngineKind


def knobs_of(kind: EngineKind) -> SchedulerFlags:
    return adapter_for(kind).scheduler


def effective_step(args: Mapping[str, object], knobs: SchedulerFlags) -> int | None:
    """Tokens a long prefill gets per step: the chunk, capped by the threshold when set."""
    chunk, threshold = args.get(knobs.batched_tokens), args.get(knobs.long_prefill_threshold)
    sizes = [int(v) for v in (chunk, threshold) if isinstance(v, int | str) and str(v).isdigit()
             and int(v) > 0]
    return min(sizes) if sizes else None
