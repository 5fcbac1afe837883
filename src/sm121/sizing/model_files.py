"""Find a recipe's model on disk: its config.json and its weight files (safetensors), read
here so the memory planner gets them as values (memory.model.ModelFiles).

A model is local (model.path), the tiny model sm121 generates, or a Hugging Face id resolved
through the HF cache (HF_HUB_CACHE, HF_HOME/hub or ~/.cache/huggingface/hub)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from sm121 import paths
from sm121.memory.model import ModelFiles
from sm121.recipes.schema import ModelSource, Recipe


def hf_cache_dir() -> Path:
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    return Path.home() / ".cache" / "huggingface" / "hub"


def model_directory(recipe: Recipe) -> Path | None:
    model = recipe.model
    if model.source is ModelSource.TINY:
        return paths.models_dir() / "tiny"
    if model.source is ModelSource.PATH and model.path:
        return Path(paths.expand_sm121_home(model.path)).expanduser()
    if model.hf_id:
        return hf_snapshot(model.hf_id, model.revision)
    return None


def hf_snapshot(hf_id: str, revision: str | None = None) -> Path | None:
    repo = hf_cache_dir() / paths.hf_repo_folder(hf_id)
    snapshots = repo / "snapshots"
    if not snapshots.is_dir():
        return None
    if revision and (snapshots / revision).is_dir():
        return snapshots / revision
    ref = repo / "refs" / (revision or "main")
    if ref.is_file() and (snapshots / ref.read_text().strip()).is_dir():
        return snapshots / ref.read_text().strip()
    candidates = sorted(snapshots.iterdir(), key=lambda p: p.stat().st_mtime)
    return candidates[-1] if candidates else None


def find_model_files(recipe: Recipe) -> ModelFiles:
    directory = model_directory(recipe)
    if directory is None or not directory.is_dir():
        config = _builtin_config(recipe)
        how = ("the tiny model's built-in architecture" if config else
               f"model {recipe.model.hf_id or recipe.model.path or recipe.model.id} is not on "
               "this machine")
        return ModelFiles(None, config, None, how)
    config_file = directory / "config.json"
    config = json.loads(config_file.read_text()) if config_file.is_file() else None
    weights = sorted(directory.glob("*.safetensors"))
    size = sum(f.stat().st_size for f in weights) if weights else None
    return ModelFiles(str(directory), config, size, f"files in {directory}")


def _builtin_config(recipe: Recipe) -> dict[str, Any] | None:
    """The tiny model's architecture is known before it is generated."""
    if recipe.model.source is not ModelSource.TINY:
        return None
    from sm121.models.tiny import ARCHITECTURE

    return {**ARCHITECTURE, "dtype": "bfloat16", "model_type": "llama"}
