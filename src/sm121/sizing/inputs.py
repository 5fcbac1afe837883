"""A MemoryRequest with what the pure planner reads: the model's files and the recipe's
observed boots from disk, and the engine's memory flag names from its adapter."""

from __future__ import annotations

from collections.abc import Mapping

from sm121.engines.adapter import EngineAdapter
from sm121.engines.registry import adapter_for
from sm121.memory.model import GB10_ASSUMED, MemoryRequest, NodeMemory
from sm121.recipes.loader import LoadedRecipe
from sm121.recipes.schema import ArgValue
from sm121.sizing.calibration_store import load_observations
from sm121.sizing.model_files import find_model_files


def memory_request(loaded: LoadedRecipe, profile: str | None = None,
                   overrides: Mapping[str, ArgValue] | None = None, *,
                   engine: EngineAdapter | None = None, node: NodeMemory = GB10_ASSUMED,
                   weights_gib: float | None = None, kv_bytes: int | None = None,
                   env: Mapping[str, str] | None = None,
                   calibrate: bool = True) -> MemoryRequest:
    """`engine`: the adapter the caller carries (a plan's, the doctor's); without one, the
    recipe meets its engine here (`sm121 memory plan`, a run's kept recipe)."""
    recipe = loaded.recipe
    engine = engine or adapter_for(recipe.engine.kind)
    return MemoryRequest(
        recipe=loaded, profile=profile, overrides=dict(overrides or {}), node=node,
        weights_gib=weights_gib, kv_bytes=kv_bytes, env=dict(env or {}), calibrate=calibrate,
        files=find_model_files(recipe), observations=tuple(load_observations(recipe)),
        flags=engine.memory)
