"""Calibration: what an engine really reported at boot, stored per recipe and profile.

An observation comes from a run's engine log (KV pool tokens, max concurrency, KV memory,
weights) together with the settings that run used. The planner reports its prediction
against it, and uses it: the reserve it implies replaces the uncalibrated estimate.
Stored under $SM121_HOME/calibration/<recipe>/<profile>.json; the field's own figures ship
with sm121 as built-in observations."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel

from sm121 import paths
from sm121.engines.registry import adapter_of
from sm121.errors import Sm121Error
from sm121.launch.run_state import head_env, load_plan
from sm121.memory.field import FIELD_OBSERVATIONS


class Observation(BaseModel):
    recipe: str
    profile: str | None
    source: str  # a run id, or the measurement it comes from
    gmu: float | None = None
    node_total_gib: float | None = None
    weights_gib: float | None = None
    kv_gib: float | None = None  # KV memory the engine reported
    kv_explicit: bool = False  # the KV size was set, not derived from GMU
    pool_tokens: int | None = None
    max_concurrency: float | None = None
    max_model_len: int | None = None
    batched_tokens: int | None = None
    block_size: int | None = None
    kv_cache_dtype: str | None = None
    note: str = ""

    def reserve_gib(self) -> float | None:
        """What the engine kept for itself beyond weights and KV (GMU mode only)."""
        if self.kv_explicit or None in (self.gmu, self.node_total_gib, self.weights_gib,
                                        self.kv_gib):
            return None
        assert self.gmu is not None and self.node_total_gib is not None
        assert self.weights_gib is not None and self.kv_gib is not None
        return self.gmu * self.node_total_gib - self.weights_gib - self.kv_gib


def store_dir() -> Path:
    return paths.home() / "calibration"


def _file(recipe: str, profile: str | None) -> Path:
    return store_dir() / recipe / f"{profile or 'default'}.json"


def load_observations(recipe: str, profile: str | None = None) -> list[Observation]:
    """Stored observations for the recipe (one profile, or all), then the built-in ones."""
    files = ([_file(recipe, profile)] if profile is not None
             else sorted((store_dir() / recipe).glob("*.json")))
    stored = [Observation.model_validate(item) for f in files if f.is_file()
              for item in json.loads(f.read_text())]
    builtin = [o for o in builtin_observations()
               if o.recipe == recipe and (profile is None or o.profile == profile)]
    return stored + builtin


def save_observation(observation: Observation) -> Path:
    file = _file(observation.recipe, observation.profile)
    file.parent.mkdir(parents=True, exist_ok=True)
    existing = ([Observation.model_validate(i) for i in json.loads(file.read_text())]
                if file.is_file() else [])
    kept = [o for o in existing if o.source != observation.source] + [observation]
    file.write_text(json.dumps([o.model_dump(mode="json") for o in kept], indent=2))
    return file


def builtin_observations() -> list[Observation]:
    return [Observation.model_validate(item) for item in FIELD_OBSERVATIONS]


def observe_run(run_dir: Path, node_total_gib: float | None = None) -> Observation:
    """An observation from a run directory: its plan (settings) and engine log (results)."""
    run_file = run_dir / "run.json"
    if not run_file.is_file():
        raise Sm121Error(f"{run_dir} is not a run directory", "see `sm121 status` for runs")
    run, plan = json.loads(run_file.read_text()), load_plan(run_dir)
    engine = adapter_of(plan.get("engine"))
    facts = engine.parse_boot_log_file(run_dir / "engine.log")
    if facts.kv_pool_tokens is None and facts.kv_memory_gib is None:
        raise Sm121Error(f"run {run['run_id']}: the engine log has no KV cache lines yet",
                         "calibrate after the engine has booted (status ready)")
    args, env = plan["engine_args"], head_env(run_dir)
    flags = engine.memory
    explicit = bool(env.get("VLLM_CPU_KVCACHE_SPACE") or args.get(flags.kv_bytes))
    return Observation(
        recipe=run["recipe"], profile=run["profile"], source=run["run_id"],
        gmu=args.get(flags.gmu),
        node_total_gib=node_total_gib or facts.memory_total_gib,
        weights_gib=facts.weights_gib, kv_gib=facts.kv_memory_gib, kv_explicit=explicit,
        pool_tokens=facts.kv_pool_tokens, max_concurrency=facts.max_concurrency,
        max_model_len=facts.max_concurrency_at_tokens or args.get(flags.max_model_len),
        batched_tokens=args.get(flags.batched_tokens), block_size=args.get(flags.block_size),
        kv_cache_dtype=args.get(flags.kv_cache_dtype),
    )
