"""`cluster check --recipe R`: what `sm121 stage` left on each node for the recipe (weights,
image, compile cache), from the node's staged manifest, and the command that stages what is
missing."""

from __future__ import annotations

import shlex

from sm121.cluster.spec import Node
from sm121.errors import Sm121Error
from sm121.findings import Status
from sm121.hosts.transport import Transport
from sm121.recipes.schema import Recipe
from sm121.stage.staged import node_staged


def staged_detail(transport: Transport, node: Node, recipe: Recipe, recipe_name: str,
                  cluster_file: str, local: bool) -> tuple[Status, str, str]:
    """(status, detail, fix) of the node's staged state for the recipe."""
    command = shlex.join(["sm121", "stage", recipe_name, "--cluster", cluster_file])
    try:
        manifest = node_staged(transport, node, recipe, local)
    except Sm121Error as exc:
        return "warning", f"cannot read the staged manifest: {exc.message}", exc.hint
    if manifest is None or manifest.weights is None:
        return ("warning", f"weights of {recipe.model.id} not staged on this node: a serve "
                "reads them from the recipe's location (`sm121 doctor --recipe` says over "
                "which link)", command)
    weights = manifest.weights
    parts = [f"weights staged in {weights.folder} ({len(weights.files)} files, "
             f"{weights.bytes / 1e9:.2f} GB, revision {weights.revision})"]
    if manifest.image is not None:
        parts.append(f"image {manifest.image.id[:19]}")
    if manifest.cache is not None:
        key = manifest.cache.key
        parts.append(f"compile cache for {key.get('gpu')}, {key.get('engine')}")
    return "ok", "; ".join(parts), ""
