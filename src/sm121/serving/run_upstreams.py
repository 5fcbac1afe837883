"""Upstreams from sm121's own runs: a run's saved plan says its URL, its request policy and
its max-num-seqs, so a gateway in front of it serves it as its recipe wants."""

from __future__ import annotations

from sm121.errors import Sm121Error
from sm121.gateway.config import DEFAULT_LONG_PROMPT_TOKENS, UpstreamSpec
from sm121.plan.build import build_plan
from sm121.plan.model import ServePlan
from sm121.recipes.schema import RequestPolicy
from sm121.runs.state import RunInfo, load_plan

DEFAULT_INFLIGHT = 64  # an engine whose plan names no max-num-seqs


def spec_from_plan(plan: ServePlan, name: str, url: str,
                   long_prompt_tokens: int = DEFAULT_LONG_PROMPT_TOKENS,
                   long_lane: int = 1) -> UpstreamSpec:
    seqs = plan.engine_args.get(plan.adapter.memory.max_num_seqs)
    return UpstreamSpec(url=url, name=name, policy=plan.request_policy,
                        max_inflight=seqs if isinstance(seqs, int) and seqs > 0
                        else DEFAULT_INFLIGHT,
                        long_prompt_tokens=long_prompt_tokens, long_lane=long_lane)


def spec_for_run(run: RunInfo, long_prompt_tokens: int = DEFAULT_LONG_PROMPT_TOKENS,
                 long_lane: int = 1) -> UpstreamSpec:
    try:
        plan = ServePlan.model_validate(load_plan(run.directory))
    except (OSError, ValueError, Sm121Error) as exc:
        raise Sm121Error(f"run {run.run_id} has no readable plan: {exc}",
                         "give the engine by URL instead: --upstream URL --recipe NAME") from exc
    return spec_from_plan(plan, run.run_id, run.base_url, long_prompt_tokens, long_lane)


def recipe_facts(recipe: str | None, profile: str | None) -> tuple[RequestPolicy, int | None]:
    """A recipe's request policy and max-num-seqs, for an engine given by URL."""
    if recipe is None:
        return RequestPolicy(), None
    # Read for its request policy only: nothing of it runs here.
    plan = build_plan(recipe, profile, None, None, 8000, "127.0.0.1", argv_check=False)
    seqs = plan.engine_args.get(plan.adapter.memory.max_num_seqs)
    return plan.request_policy, seqs if isinstance(seqs, int) else None
