"""`bench knee --recipe`: boot a recipe with a step budget that holds the largest step and a
batch limit that holds the largest batch, run the knee scenario on it, stop."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from sm121.bench.boot import booted, steps
from sm121.bench.result_models import ScenarioResults
from sm121.bench.runner import Target, run_scenario
from sm121.bench.scenarios.knee.models import KneeSample, KneeSettings, KneeSummary
from sm121.bench.scenarios.knee.scenario import Knee
from sm121.engines.registry import adapter_for
from sm121.plan.effective import profile_args
from sm121.progress import Say
from sm121.recipes.loader import load_recipe
from sm121.recipes.schema import ArgValue


def knee_overrides(recipe: str, params: dict[str, Any], overrides: dict[str, ArgValue],
                   profile: str | None = None) -> tuple[dict[str, ArgValue], str, str]:
    """The boot's args: its step budget holds the largest step and its batch limit the
    largest batch (the engine's names for both, from its adapter). Where the engine splits its
    context across the batch's sequences (llama.cpp's slots), the context grows with them, so
    each sequence keeps the window the profile gives it."""
    loaded = load_recipe(recipe).recipe
    engine = adapter_for(loaded.engine.kind)
    knobs = engine.scheduler
    p = KneeSettings.model_validate(params)
    args = {**profile_args(loaded, profile or loaded.default_profile), **overrides}
    return ({**overrides, knobs.batched_tokens: max(p.steps),
             **engine.memory.with_seqs(args, max(p.batches))},
            knobs.batched_tokens, knobs.max_num_seqs)


def knee_on_recipe(recipe: str, profile: str | None, overrides: dict[str, ArgValue],
                   params: dict[str, Any], out: Path, port: int, trust: bool = False,
                   say: Say = lambda _: None, cluster: str | None = None,
                   host: str = "127.0.0.1",
                   while_up: Callable[[str], Mapping[str, Any]] | None = None
                   ) -> ScenarioResults[KneeSample, KneeSummary]:
    """`while_up`: asked with the engine's base URL once it is ready, before the knee; what it
    answers is kept in the results file beside the boot (tune counts its workload's first
    prompt there, on the only engine it boots before its arms)."""
    args, step_budget, batch_limit = knee_overrides(recipe, params, overrides, profile)
    with booted(recipe, profile, args, port, host, trust=trust, say=say, cluster=cluster) as boot:
        extra = dict(while_up(boot.plan.base_url)) if while_up is not None else {}
        say(f"knee: engine ready ({step_budget} {args[step_budget]}, {batch_limit} "
            f"{args[batch_limit]}), measuring")
        return asyncio.run(run_scenario(
            Knee(), Target(boot.plan.base_url, boot.plan.readiness.model),
            {**params, "chunk": args[step_budget]}, out, progress=steps(say),
            header={**extra, "boot": boot.record.to_json()}))
