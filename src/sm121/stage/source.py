"""Where a stage reads the model from: a node (the head unless `--from NODE`) at the recipe's
model location there, or a folder on this machine (`--from PATH`). A Hugging Face model is
taken at its pinned revision, or at the commit its `main` ref names."""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from pathlib import Path

from sm121 import paths
from sm121.cluster.spec import Cluster
from sm121.errors import Sm121Error
from sm121.hosts.transport import LocalTransport, Transport
from sm121.paths import expand_home
from sm121.recipes.schema import ModelSource, Recipe
from sm121.stage.layout import ModelKey, model_key, repo_folder, snapshot_folder
from sm121.stage.nodes import StageNode

LOCAL = "local"


@dataclass(frozen=True)
class Source:
    name: str  # a node's name, or `local` for a folder on this machine
    transport: Transport
    folder: str
    key: ModelKey
    local: bool
    address: str | None = None
    # What the folder's symlinks may point into: the folder itself, or for a Hugging Face
    # snapshot its repo folder (the links point into ../../blobs/). None: the folder.
    link_root: str | None = None

    @property
    def links_within(self) -> str:
        return self.link_root or self.folder


def resolve_source(recipe: Recipe, cluster: Cluster, nodes: list[StageNode],
                   wanted: str | None) -> Source:
    by_name = {n.name: n for n in nodes}
    if wanted and wanted not in by_name and _is_path(wanted):
        folder = str(Path(wanted).expanduser().resolve())
        if not Path(folder).is_dir():
            raise Sm121Error(f"--from {wanted}: no such folder on this machine",
                             "give a node of the cluster file or a model folder here")
        return Source(LOCAL, LocalTransport(name=LOCAL), folder, model_key(recipe), True)
    name = wanted or cluster.head
    if name not in by_name:
        raise Sm121Error(f"--from {name}: not a node of the cluster file",
                         f"nodes: {', '.join(by_name)}, or a folder path on this machine")
    node = by_name[name]
    folder, key = model_on_node(recipe, node)
    hf = recipe.model.source is ModelSource.HF and recipe.model.hf_id
    return Source(node.name, node.transport, folder, key, node.local, node.address,
                  link_root=repo_folder(node.hf_cache, key) if hf else None)


def _is_path(value: str) -> bool:
    return value.startswith(("/", "~", "./", "../")) or "/" in value


def model_on_node(recipe: Recipe, node: StageNode) -> tuple[str, ModelKey]:
    """The recipe's model folder on the node, as the engine there would find it."""
    model = recipe.model
    if model.source is ModelSource.HF and model.hf_id:
        return _hf_snapshot(recipe, node)
    if model.source is ModelSource.TINY:
        original = str(paths.models_dir() / "tiny")
    elif model.path:
        original = expand_home(paths.expand_sm121_home(model.path), node.home)
    else:
        raise Sm121Error(f"recipe model {model.id} names no path or hf_id",
                         "set model.path or model.hf_id in the recipe")
    key = model_key(recipe)
    staged = snapshot_folder(node.hf_cache, key)
    found = node.transport.run(["sh", "-c", 'test -d "$1" && echo "$1" || '
                                '{ test -d "$2" && echo "$2"; }', "find", original, staged],
                               timeout=60).stdout.strip()
    if not found:
        raise Sm121Error(f"{node.name}: the model is not at {original}",
                         "stage from the node that holds it (--from NODE), or from a folder "
                         "on this machine (--from PATH)")
    return found, key


def _hf_snapshot(recipe: Recipe, node: StageNode) -> tuple[str, ModelKey]:
    key = model_key(recipe)
    repo = repo_folder(node.hf_cache, key)
    wanted = recipe.model.revision or "main"
    # A pinned commit is a snapshot folder; a branch or tag is a ref file naming the commit.
    script = ('if [ -d "$1/snapshots/$2" ]; then echo "$2"; '
              'elif [ -f "$1/refs/$2" ]; then cat "$1/refs/$2"; fi')
    commit = node.transport.run(["sh", "-c", script, "rev", repo, wanted],
                                timeout=60).stdout.strip()
    if not commit or "/" in commit or commit.startswith("."):
        raise Sm121Error(f"{node.name}: {recipe.model.hf_id} at revision {wanted} is not in "
                         f"the Hugging Face cache {node.hf_cache}",
                         "download it there first (hf download), or stage from the node that "
                         "has it (--from NODE)")
    key = model_key(recipe, commit)
    return posixpath.join(repo, "snapshots", commit), key
