"""Upstreams from sm121's own runs: a run's saved plan says its URL, its request policy and
its max-num-seqs, so a gateway in front of it serves it as its recipe wants."""

from __future__ import annotations

from dataclasses import replace

from sm121.errors import Sm121Error
from sm121.gateway.config import DEFAULT_LONG_PROMPT_TOKENS, UpstreamSpec
from sm121.plan.build import build_plan
from sm121.plan.model import ServePlan
from sm121.recipes.schema import RequestPolicy
from sm121.runs.state import RunInfo, load_plan
from sm121.serving.endpoint_run import logged_pool_tokens

DEFAULT_INFLIGHT = 64  # an engine whose plan names no max-num-seqs


def spec_from_plan(plan: ServePlan, name: str, url: str,
                   long_prompt_tokens: int = DEFAULT_LONG_PROMPT_TOKENS,
                   long_lane: int = 1, run: RunInfo | None = None) -> UpstreamSpec:
    """`run`: the run serving it, whose boot log states the KV pool where the engine's
    /metrics does not, for session admission."""
    seqs = plan.engine_args.get(plan.adapter.memory.max_num_seqs)
    return with_pool(UpstreamSpec(url=url, name=name, policy=plan.request_policy,
                                  max_inflight=seqs if isinstance(seqs, int) and seqs > 0
                                  else DEFAULT_INFLIGHT,
                                  long_prompt_tokens=long_prompt_tokens, long_lane=long_lane),
                     run, plan)


def spec_for_run(run: RunInfo, long_prompt_tokens: int = DEFAULT_LONG_PROMPT_TOKENS,
                 long_lane: int = 1) -> UpstreamSpec:
    try:
        plan = ServePlan.model_validate(load_plan(run.directory))
    except (OSError, ValueError, Sm121Error) as exc:
        raise Sm121Error(f"run {run.run_id} has no readable plan: {exc}",
                         "give the engine by URL instead: --upstream URL --recipe NAME") from exc
    return spec_from_plan(plan, run.run_id, run.base_url, long_prompt_tokens, long_lane, run)


def with_pool(spec: UpstreamSpec, run: RunInfo | None, plan: ServePlan | None = None
              ) -> UpstreamSpec:
    """The spec with the KV pool the run's boot log states (unchanged without a run, a
    readable plan or a logged pool, or where a pool is already set).

    Read once, when the gateway starts, and not again as the log changes: a supervised
    restart boots the run's own argv, so the same pool (up to the few blocks a boot's
    activation peak moves it), and an engine whose /metrics states its pool is read again
    anyway when it comes back (the health monitor learns it on re-admission). Another run
    behind the same URL changes more than the pool: the request policy and the in-flight cap
    (its max-num-seqs) came from the old run's plan too, so re-reading the pool alone would
    leave the gateway half right; a gateway follows a new run by starting again with it
    (`serve --gateway`'s gateway belongs to its run and stops with it)."""
    if run is None or spec.pool_tokens is not None:
        return spec
    if plan is None:
        try:
            plan = ServePlan.model_validate(load_plan(run.directory))
        except (OSError, ValueError, Sm121Error):
            return spec
    tokens = logged_pool_tokens(run, plan.adapter)
    if tokens is None:
        return spec
    return replace(spec, pool_tokens=tokens, pool_source=f"the boot log of run {run.run_id}")


def given_pool(spec: UpstreamSpec, tokens: int | None) -> UpstreamSpec:
    """The spec with a pool given by hand (--pool-tokens), which wins over the engine's."""
    if tokens is None:
        return spec
    return replace(spec, pool_tokens=tokens, pool_source="given (--pool-tokens)",
                   pool_overrides=True)


def recipe_facts(recipe: str | None, profile: str | None) -> tuple[RequestPolicy, int | None]:
    """A recipe's request policy and max-num-seqs, for an engine given by URL."""
    if recipe is None:
        return RequestPolicy(), None
    # Read for its request policy only: nothing of it runs here.
    plan = build_plan(recipe, profile, None, None, 8000, "127.0.0.1", argv_check=False)
    seqs = plan.engine_args.get(plan.adapter.memory.max_num_seqs)
    return plan.request_policy, seqs if isinstance(seqs, int) else None
