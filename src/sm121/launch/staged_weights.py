"""A serve reads the node-local staged copy of the weights when `sm121 stage` left one: the
model argument of a native node's argv becomes that node's staged snapshot folder (the served
model name stays the recipe's), unless its files changed since they were verified. Docker
nodes keep the model id: the container finds the copy
through the HF cache mounted into it. `sm121 plan --staged` shows the same per node."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sm121.hosts.parallel import in_parallel
from sm121.hosts.transport import transport_for
from sm121.launch.node_ops import NodeSlot
from sm121.paths import expand_home
from sm121.plan.model import NodePlan, ServePlan
from sm121.recipes.schema import Recipe
from sm121.stage.files import list_files
from sm121.stage.layout import DEFAULT_HF_CACHE, plan_model_key
from sm121.stage.manifest import find_manifest, mismatches
from sm121.stage.staged import staged_on


def use_staged(slot: NodeSlot, plan: ServePlan, progress: Callable[[str], None]) -> None:
    if slot.plan.runtime != "native":
        return
    repo, revision = plan_model_key(plan.recipe_spec)
    if not repo:
        return
    hf_cache = expand_home(slot.plan.hf_cache or DEFAULT_HF_CACHE, slot.home)
    manifest = find_manifest(slot.transport, hf_cache, repo, revision)
    if manifest is None or manifest.weights is None:
        return
    folder = manifest.weights.folder
    if plan.model_ref not in slot.plan.argv or folder == plan.model_ref:
        return
    expected = {n: f.sha256 for n, f in manifest.weights.files.items()}
    changed = mismatches(manifest.weights, expected, list_files(slot.transport, folder))
    if changed:
        progress(f"{slot.plan.name}: its staged copy {folder} changed since it was verified "
                 f"({', '.join(changed[:3])}): reading {plan.model_ref} instead; `sm121 stage` "
                 "copies it again")
        return
    slot.plan = slot.plan.model_copy(update={
        "argv": [folder if arg == plan.model_ref else arg for arg in slot.plan.argv]})
    progress(f"{slot.plan.name}: weights from its staged copy {folder}")


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

    return dict(zip([n.name for n in plan.nodes], in_parallel(plan.nodes, one), strict=True))
