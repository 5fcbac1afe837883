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
from sm121.display import escape
from sm121.errors import Sm121Error
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
    config = read_config(config_file) if config_file.is_file() else None
    weights = sorted(directory.glob("*.safetensors"))
    size = sum(f.stat().st_size for f in weights) if weights else None
    return ModelFiles(str(directory), config, size, f"files in {directory}")


# A model's config.json is a stranger's file (a local folder, a downloaded repository): read
# bounded, and the numbers the memory planner loops over or multiplies held to what a real
# model has (a `num_hidden_layers` of 1e8 took 2.2 GB in `plan --memory`).
MAX_CONFIG_BYTES = 16 << 20
ARCHITECTURE_LIMITS = {
    "num_hidden_layers": 4096, "num_attention_heads": 1 << 16, "num_key_value_heads": 1 << 16,
    "hidden_size": 1 << 20, "head_dim": 1 << 16, "v_head_dim": 1 << 16,
    "kv_lora_rank": 1 << 20, "qk_rope_head_dim": 1 << 16, "sliding_window": 1 << 30,
    "sliding_window_pattern": 4096, "max_position_embeddings": 1 << 30,
}


def read_config(path: Path) -> dict[str, Any]:
    """A model's config.json, checked: a JSON object under MAX_CONFIG_BYTES, no NaN or
    infinity, and each architecture number a whole number within ARCHITECTURE_LIMITS."""
    with path.open("rb") as file:
        raw = file.read(MAX_CONFIG_BYTES + 1)
    if len(raw) > MAX_CONFIG_BYTES:
        raise Sm121Error(f"{path}: over {MAX_CONFIG_BYTES >> 20} MB, not a model's config",
                         "point model.path at the model's folder")
    try:
        data = json.loads(raw, parse_constant=_no_constant)
    except ValueError as exc:
        raise Sm121Error(f"{path}: not readable JSON: {exc}", "a model's config.json") from exc
    if not isinstance(data, dict):
        raise Sm121Error(f"{path}: not a JSON object", "a model's config.json")
    for part in (data, data.get("text_config")):
        if not isinstance(part, dict):
            continue
        for key, high in ARCHITECTURE_LIMITS.items():
            value = part.get(key)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= high:
                raise Sm121Error(f"{path}: {key} is {escape(repr(value))}; a model's is a whole "
                                 f"number from 0 to {high}", "check the model's config.json")
    for key in ("layer_types", "compress_ratios"):
        items = data.get(key)
        if isinstance(items, list) and len(items) > ARCHITECTURE_LIMITS["num_hidden_layers"]:
            raise Sm121Error(f"{path}: {key} lists {len(items)} layers",
                             "check the model's config.json")
    return data


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not a number sm121 reads (NaN and infinity are refused)")


def _builtin_config(recipe: Recipe) -> dict[str, Any] | None:
    """The tiny model's architecture is known before it is generated."""
    if recipe.model.source is not ModelSource.TINY:
        return None
    from sm121.models.tiny import ARCHITECTURE

    return {**ARCHITECTURE, "dtype": "bfloat16", "model_type": "llama"}
