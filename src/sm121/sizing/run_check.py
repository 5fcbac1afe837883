"""Predicted against observed for a run: the plan the run used, the pool its engine logged.

Reads the run directory (its plan, env and engine log) and feeds the pure planner."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel

from sm121.engines.adapter import EngineAdapter
from sm121.engines.registry import adapter_of
from sm121.errors import Sm121Error
from sm121.memory.budget import explicit_kv_bytes
from sm121.memory.calibration import Observation
from sm121.memory.model import GB10_ASSUMED, MemoryRequest, NodeMemory, error_pct
from sm121.memory.planner import plan_memory
from sm121.recipes.loader import LoadedRecipe, load_recipe, validate_model
from sm121.recipes.schema import Recipe
from sm121.runs.state import PLAN_FILE, head_env, load_plan
from sm121.sizing.inputs import memory_request


class RunCheck(BaseModel):
    run_id: str
    settings: str
    predicted_tokens: int | None
    observed_tokens: int | None
    predicted_concurrency: float | None
    observed_concurrency: float | None
    predicted_kv_gib: float
    observed_kv_gib: float | None

    @property
    def error_pct(self) -> float | None:
        return error_pct(self.predicted_tokens, self.observed_tokens)


def request_for_run(run_dir: Path, engine: EngineAdapter,
                    node: NodeMemory = GB10_ASSUMED) -> MemoryRequest:
    """The memory request that reproduces a run: its recipe and profile, with the exact
    engine args and env the run was started with."""
    plan = load_plan(run_dir)
    return memory_request(load_run_recipe(run_dir), plan["profile"], plan["engine_args"],
                          engine=engine, env=head_env(run_dir), node=node, calibrate=False)


def check_run(run_dir: Path, node: NodeMemory = GB10_ASSUMED) -> tuple[RunCheck, Observation]:
    """Predict without calibration (the prediction must not learn from what it is checked
    against), then set it beside what the engine logged."""
    # Where a run's plan (kept as JSON, maybe from an older sm121) meets its engine.
    engine = adapter_of(load_plan(run_dir).get("engine"))
    observed = observe_run(run_dir, engine, node.total_gib if node is not GB10_ASSUMED else None)
    plan = plan_memory(request_for_run(run_dir, engine, node))
    settings = [f"KV {plan.kv_how or f'{plan.kv_gib:.2f} GiB'}", f"block {plan.block_size}",
                f"max-model-len {plan.max_model_len:,}", f"KV dtype {plan.kv_dtype or '?'}"]
    check = RunCheck(
        run_id=observed.source, settings=", ".join(settings),
        predicted_tokens=plan.pool_tokens, observed_tokens=observed.pool_tokens,
        predicted_concurrency=plan.max_concurrency, observed_concurrency=observed.max_concurrency,
        predicted_kv_gib=round(plan.kv_gib, 3), observed_kv_gib=observed.kv_gib,
    )
    return check, observed


def observe_run(run_dir: Path, engine: EngineAdapter,
                node_total_gib: float | None = None) -> Observation:
    """An observation from a run directory: its plan (settings) and engine log (results)."""
    run_file = run_dir / "run.json"
    if not run_file.is_file():
        raise Sm121Error(f"{run_dir} is not a run directory", "see `sm121 status` for runs")
    run, plan = json.loads(run_file.read_text()), load_plan(run_dir)
    facts = engine.parse_boot_log_file(run_dir / "engine.log")
    if facts.kv_pool_tokens is None and facts.kv_memory_gib is None:
        raise Sm121Error(f"run {run['run_id']}: the engine log has no KV cache lines yet",
                         "calibrate after the engine has booted (status ready)")
    args, env = plan["engine_args"], head_env(run_dir)
    flags = engine.memory
    explicit = explicit_kv_bytes(args, env, flags) is not None
    return Observation(
        recipe=run["recipe"], profile=run["profile"], source=run["run_id"],
        gmu=args.get(flags.gmu),
        node_total_gib=node_total_gib or facts.memory_total_gib,
        weights_gib=facts.weights_gib, kv_gib=facts.kv_memory_gib, kv_explicit=explicit,
        pool_tokens=facts.kv_pool_tokens, max_concurrency=facts.max_concurrency,
        max_model_len=facts.max_concurrency_at_tokens or args.get(flags.max_model_len),
        batched_tokens=args.get(flags.batched_tokens), block_size=args.get(flags.block_size),
        kv_cache_dtype=args.get(flags.kv_cache_dtype),
        # A refusal logs the need of one request at max-model-len: what calibrates the need.
        need_gib=facts.kv_needed_gib,
        outcome="refused" if facts.kv_needed_gib is not None else None,
    )


def load_run_recipe(folder: Path) -> LoadedRecipe:
    """The recipe a run was started with, from its own directory: the copy its plan keeps (a
    recipe given by path works after the file moved), else, for a run from before plans kept
    it, the recipe of that name."""
    plan = load_plan(folder)
    spec, source = plan.get("recipe_spec"), plan.get("recipe_source") or f"{folder}/{PLAN_FILE}"
    if spec is None:
        return load_recipe(plan["recipe"])
    return LoadedRecipe(validate_model(Recipe, spec, f"{source} (kept in {folder.name})"), source)
