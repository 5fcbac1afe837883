"""Where a recipe's model lives on a node once staged: the Hugging Face cache layout
(`HF_HOME/hub/models--ORG--NAME/snapshots/REVISION/`) under the node's own cache folder, and
the staged manifest beside it (`HF_HOME/sm121-stage/`). Pure: no I/O."""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from sm121 import paths
from sm121.cluster.spec import Node
from sm121.recipes.schema import ModelSource, Recipe

DEFAULT_HF_CACHE = "~/.cache/huggingface"
DEFAULT_COMPILE_CACHE = "~/.cache/vllm"
MANIFEST_DIR = "sm121-stage"
# A path model has no revision of its own: its staged snapshot is named by this.
LOCAL_REVISION = "local"


@dataclass(frozen=True)
class ModelKey:
    """Which model a staged copy holds: its cache folder name and revision."""

    repo: str  # models--org--name
    revision: str
    label: str  # the recipe's model id, for messages

    @property
    def manifest_name(self) -> str:
        return f"{self.repo}@{self.revision.replace('/', '--')}.json"


def model_key(recipe: Recipe, revision: str | None = None) -> ModelKey:
    """The key of the recipe's model; `revision` is the one resolved on the source (an HF
    model without a pinned revision is staged at the commit its `main` points to)."""
    model = recipe.model
    if model.source is ModelSource.HF and model.hf_id:
        return ModelKey(paths.hf_repo_folder(model.hf_id), revision or model.revision or "main",
                        model.id)
    name = PurePosixPath(model.path).name if model.path else model.id
    safe = "".join(c if c.isalnum() or c in "._-" else "-" for c in name) or "model"
    return ModelKey(f"models--sm121-local--{safe}", revision or model.revision or LOCAL_REVISION,
                    model.id)


def node_hf_cache(node: Node | None) -> str:
    return (node.hf_cache if node is not None and node.hf_cache else None) or DEFAULT_HF_CACHE


def node_compile_cache(node: Node | None) -> str:
    return ((node.compile_cache if node is not None and node.compile_cache else None)
            or DEFAULT_COMPILE_CACHE)


def repo_folder(hf_cache: str, key: ModelKey) -> str:
    return posixpath.join(hf_cache, "hub", key.repo)


def snapshot_folder(hf_cache: str, key: ModelKey) -> str:
    return posixpath.join(repo_folder(hf_cache, key), "snapshots", key.revision)


def manifest_path(hf_cache: str, key: ModelKey) -> str:
    return posixpath.join(hf_cache, MANIFEST_DIR, key.manifest_name)


def plan_model_key(recipe_spec: dict[str, Any] | None) -> tuple[str, str | None]:
    """The model's cache folder name and pinned revision from a plan's recipe (a serve's
    stage-check and staged-copy lookup), or ("", None) when the plan carries no recipe."""
    if not recipe_spec:
        return "", None
    recipe = Recipe.model_validate(recipe_spec)
    return model_key(recipe).repo, recipe.model.revision
