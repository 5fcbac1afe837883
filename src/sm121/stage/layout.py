"""Where a recipe's model lives on a node once staged: the Hugging Face cache layout
(`HF_HOME/hub/models--ORG--NAME/snapshots/REVISION/`) under the node's own cache folder, and
the staged manifest beside it (`HF_HOME/sm121-stage/`). Pure: no I/O."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from sm121 import paths
from sm121.cluster.spec import Node
from sm121.errors import Sm121Error
from sm121.names import check_revision
from sm121.recipes.schema import ModelSource, Recipe
from sm121.safe_paths import under_root

DEFAULT_HF_CACHE = "~/.cache/huggingface"
DEFAULT_COMPILE_CACHE = "~/.cache/vllm"
MANIFEST_DIR = "sm121-stage"
# A path model has no revision of its own: its staged snapshot is named by this.
LOCAL_REVISION = "local"
_REPO_FOLDER = re.compile(r"models--[A-Za-z0-9][A-Za-z0-9._-]*")


@dataclass(frozen=True)
class ModelKey:
    """Which model a staged copy holds: its cache folder name and revision."""

    repo: str  # models--org--name
    revision: str
    label: str  # the recipe's model id, for messages

    def __post_init__(self) -> None:
        # Both become folder names on every node; the revision may have been read from a
        # node's refs/ file, so it is checked here, where every key is made.
        if not _REPO_FOLDER.fullmatch(self.repo) or ".." in self.repo:
            raise Sm121Error(f"model {self.label}: {self.repo!r} is not a cache folder name",
                             "model ids and hf_ids are plain words")
        try:
            check_revision(self.revision)
        except ValueError as exc:
            raise Sm121Error(f"model {self.label}: {exc}",
                             "pin model.revision to a commit hash or a branch or tag name") \
                from None

    @property
    def manifest_name(self) -> str:
        return f"{self.repo}@{self.revision}.json"


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
    return under_root(hf_cache, "hub", key.repo)


def snapshot_folder(hf_cache: str, key: ModelKey) -> str:
    return under_root(hf_cache, "hub", key.repo, "snapshots", key.revision)


def ref_file(hf_cache: str, key: ModelKey, ref: str) -> str:
    """HF_HOME/hub/REPO/refs/REF: the file naming the commit a branch or tag points to."""
    return under_root(hf_cache, "hub", key.repo, "refs", check_revision(ref))


def manifest_path(hf_cache: str, key: ModelKey) -> str:
    return under_root(hf_cache, MANIFEST_DIR, key.manifest_name)


def plan_model_key(recipe_spec: dict[str, Any] | None) -> tuple[str, str | None]:
    """The model's cache folder name and pinned revision from a plan's recipe (a serve's
    stage-check and staged-copy lookup), or ("", None) when the plan carries no recipe."""
    if not recipe_spec:
        return "", None
    recipe = Recipe.model_validate(recipe_spec)
    return model_key(recipe).repo, recipe.model.revision
