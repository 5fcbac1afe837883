"""The scheduler knobs tune varies, asked of the recipe's engine adapter (its names for them),
and which of them the engine's version has (the flag list sm121 keeps for that version:
bundled, or read from the installed engine by `sm121 engine flags`)."""

from __future__ import annotations

from collections.abc import Mapping

from sm121.engines.adapter import SchedulerFlags
from sm121.engines.registry import adapter_for
from sm121.recipes.schema import EngineKind, Recipe


def knobs_of(kind: EngineKind) -> SchedulerFlags:
    return adapter_for(kind).scheduler


def version_flags(recipe: Recipe) -> tuple[frozenset[str], str]:
    """(flags, the version whose list it is) for the recipe's engine, from its adapter."""
    chosen = adapter_for(recipe.engine.kind).flag_choice(recipe)
    return chosen.flags.flags, chosen.flags.version


def effective_step(args: Mapping[str, object], knobs: SchedulerFlags) -> int | None:
    """Tokens a long prefill gets per step: the chunk, capped by the threshold when set."""
    chunk, threshold = args.get(knobs.batched_tokens), args.get(knobs.long_prefill_threshold)
    sizes = [int(v) for v in (chunk, threshold) if isinstance(v, int | str) and str(v).isdigit()
             and int(v) > 0]
    return min(sizes) if sizes else None
