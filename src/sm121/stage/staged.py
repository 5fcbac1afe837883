"""What `sm121 stage` left on a node for a recipe's model, read over the node's transport:
for doctor, cluster check, the stage-check hook and serve."""

from __future__ import annotations

from sm121.cluster.spec import Node
from sm121.launch.transport import Transport
from sm121.recipes.schema import Recipe
from sm121.stage.layout import expand_home, model_key, node_hf_cache
from sm121.stage.manifest import NodeManifest, find_manifest
from sm121.stage.nodes import probe_home


def node_staged(transport: Transport, node: Node | None, recipe: Recipe,
                local: bool) -> NodeManifest | None:
    home = node.home if node is not None and node.home else None
    home = home or probe_home(transport, node.name if node else "local", local)
    hf_cache = expand_home(node_hf_cache(node), home)
    return find_manifest(transport, hf_cache, model_key(recipe).repo, recipe.model.revision)
