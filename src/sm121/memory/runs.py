"""Predicted against observed for a run: the plan the run used, the pool its engine logged."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from sm121.memory.calibration import Observation, observe_run
from sm121.memory.model import GB10_ASSUMED, MemoryRequest, NodeMemory, error_pct
from sm121.memory.planner import plan_memory
from sm121.runs.state import head_env, load_plan, load_run_recipe


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


def request_for_run(run_dir: Path, node: NodeMemory = GB10_ASSUMED) -> MemoryRequest:
    """The memory request that reproduces a run: its recipe and profile, with the exact
    engine args and env the run was started with."""
    plan = load_plan(run_dir)
    return MemoryRequest(recipe=load_run_recipe(run_dir), profile=plan["profile"],
                         overrides=plan["engine_args"], env=head_env(run_dir), node=node,
                         calibrate=False)


def check_run(run_dir: Path, node: NodeMemory = GB10_ASSUMED) -> tuple[RunCheck, Observation]:
    """Predict without calibration (the prediction must not learn from what it is checked
    against), then set it beside what the engine logged."""
    observed = observe_run(run_dir, node.total_gib if node is not GB10_ASSUMED else None)
    plan = plan_memory(request_for_run(run_dir, node))
    settings = [f"KV {plan.kv_how or f'{plan.kv_gib:.2f} GiB'}", f"block {plan.block_size}",
                f"max-model-len {plan.max_model_len:,}", f"KV dtype {plan.kv_dtype or '?'}"]
    check = RunCheck(
        run_id=observed.source, settings=", ".join(settings),
        predicted_tokens=plan.pool_tokens, observed_tokens=observed.pool_tokens,
        predicted_concurrency=plan.max_concurrency, observed_concurrency=observed.max_concurrency,
        predicted_kv_gib=round(plan.kv_gib, 3), observed_kv_gib=observed.kv_gib,
    )
    return check, observed
