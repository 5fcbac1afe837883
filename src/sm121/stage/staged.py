"""What `sm121 stage` left on a node for a recipe's model, read over the node's transport:
for plan, doctor, cluster check, the stage-check hook and serve."""

from __future__ import annotations

from sm121.cluster.spec import Node
from sm121.hosts.transport import Transport, node_home
from sm121.paths import expand_home
from sm121.recipes.schema import Recipe
from sm121.stage.layout import DEFAULT_HF_CACHE, model_key, node_hf_cache
from sm121.stage.manifest import NodeManifest, find_manifest


def node_staged(transport: Transport, node: Node | None, recipe: Recipe,
                local: bool) -> NodeManifest | None:
    return staged_on(transport, node.name if node else "local", node.home if node else None,
                     node_hf_cache(node), recipe, local)


def staged_on(transport: Transport, name: str, home: str | None, hf_cache: str | None,
              recipe: Recipe, local: bool) -> NodeManifest | None:
    home = home or node_home(transport, name, local)
    folder = expand_home(hf_cache or DEFAULT_HF_CACHE, home)
    return find_manifest(transport, folder, model_key(recipe).repo, recipe.model.revision)
