"""A serve reads the node-local staged copy of the weights when `sm121 stage` left one: the
model argument of a native node's argv becomes that node's staged snapshot folder (the served
model name stays the recipe's). Docker nodes keep the model id: the container finds the copy
through the HF cache mounted into it."""

from __future__ import annotations

from collections.abc import Callable

from sm121.launch.node_ops import NodeSlot
from sm121.plan.model import ServePlan
from sm121.plan.runtime_argv import expand_home
from sm121.stage.layout import DEFAULT_HF_CACHE, plan_model_key
from sm121.stage.manifest import find_manifest


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
    slot.plan = slot.plan.model_copy(update={
        "argv": [folder if arg == plan.model_ref else arg for arg in slot.plan.argv]})
    progress(f"{slot.plan.name}: weights from its staged copy {folder}")
