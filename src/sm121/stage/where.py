"""`sm121 plan --staged`: for each node of a plan, whether a serve would read the staged
local copy (and which) or the recipe's own model location."""

from __future__ import annotations

from typing import Any

from sm121.launch.transport import transport_for
from sm121.plan.model import NodePlan, ServePlan
from sm121.recipes.schema import Recipe
from sm121.stage.nodes import each
from sm121.stage.staged import staged_on


def plan_staged(plan: ServePlan) -> dict[str, dict[str, Any]]:
    if not plan.recipe_spec:
        return {}
    recipe = Recipe.model_validate(plan.recipe_spec)

    def one(node: NodePlan) -> dict[str, Any]:
        transport = transport_for(node.ssh, node.ssh_port, node.ssh_config, name=node.name)
        manifest = staged_on(transport, node.name, node.home, node.hf_cache, recipe,
                             node.ssh is None)
        if manifest is None or manifest.weights is None:
            return {"staged": None,
                    "reads": f"{plan.model_ref} (not staged: `sm121 doctor --recipe "
                             f"{plan.recipe} --cluster FILE` says over which link; "
                             f"`sm121 stage {plan.recipe} --cluster FILE` copies it)"}
        weights = manifest.weights
        return {"staged": manifest.model_dump(mode="json", exclude={"weights": {"files"}}),
                "reads": f"the staged copy {weights.folder} ({weights.bytes / 1e9:.2f} GB, "
                         f"{len(weights.files)} files, revision {weights.revision})"}

    return dict(zip([n.name for n in plan.nodes], each(plan.nodes, one), strict=True))
