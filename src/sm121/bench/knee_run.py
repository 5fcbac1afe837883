"""`bench knee --recipe`: boot a recipe with a step budget that holds the largest step and a
batch limit that holds the largest batch, run the knee scenario on it, stop."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from sm121.bench.boot import Say, served
from sm121.bench.knee import DEFAULTS, knee
from sm121.bench.results import ResultsFile
from sm121.bench.runner import Target, run_scenario
from sm121.recipes.schema import ArgValue

# The vLLM args a knee boot sets (its step budget and its batch limit).
STEP_BUDGET, BATCH_LIMIT = "max-num-batched-tokens", "max-num-seqs"


def knee_overrides(params: dict[str, Any], overrides: dict[str, ArgValue]
                   ) -> dict[str, ArgValue]:
    p = {**DEFAULTS, **params}
    return {**overrides, STEP_BUDGET: max(int(s) for s in p["steps"]),
            BATCH_LIMIT: max(int(b) for b in p["batches"])}


def knee_on_recipe(recipe: str, profile: str | None, overrides: dict[str, ArgValue],
                   params: dict[str, Any], out: Path, port: int, trust: bool = False,
                   say: Say = lambda _: None, cluster: str | None = None) -> ResultsFile:
    args = knee_overrides(params, overrides)
    with served(recipe, profile, args, port, trust=trust, say=say, cluster=cluster) as boot:
        say(f"knee: engine ready ({STEP_BUDGET} {args[STEP_BUDGET]}, {BATCH_LIMIT} "
            f"{args[BATCH_LIMIT]}), measuring")
        results = asyncio.run(run_scenario(
            "knee", knee, Target(boot.plan.base_url, boot.plan.readiness.model),
            {**params, "chunk": args[STEP_BUDGET]}, out,
            progress=lambda m, _d, _t: say(m), needs_stream=True))
        results.set(boot=boot.record)
    return results
