"""`sm121 plan NAME --memory`: the ServePlan and the memory plan of one recipe and profile.

A multi-node recipe without a cluster file cannot be rendered per node; its memory can still
be planned (on assumed GB10 nodes), so the per-node part is skipped with a note instead of
failing."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from sm121.engines.adapter import EngineAdapter
from sm121.engines.registry import adapter_for
from sm121.findings import Finding, raise_on_errors
from sm121.memory.model import MemoryPlan
from sm121.memory.planner import plan_memory
from sm121.plan.build import build_plan
from sm121.plan.effective import resolve_profile
from sm121.plan.model import ServePlan
from sm121.plan.validate import validate_overrides, validate_recipe
from sm121.recipes.loader import LoadedRecipe, load_recipe
from sm121.recipes.schema import ArgValue
from sm121.sizing.inputs import memory_request
from sm121.sizing.node import node_memory


@dataclass(frozen=True)
class PlanWithMemory:
    serve_plan: ServePlan | None  # None: a multi-node recipe without a cluster file
    memory: MemoryPlan
    note: str = ""
    findings: list[Finding] = field(default_factory=list)  # validation's, when no ServePlan


def plan_with_memory(name: str, profile: str | None, cluster: str | None,
                     overrides: Mapping[str, ArgValue], port: int, host: str) -> PlanWithMemory:
    loaded = load_recipe(name)
    serve_plan, note, findings = None, "", []
    if cluster or loaded.recipe.parallelism.nodes <= 1:
        serve_plan = build_plan(name, profile, cluster, overrides, port, host)
        engine = serve_plan.adapter
    else:
        engine = adapter_for(loaded.recipe.engine.kind)  # no plan: the recipe meets it here
        findings = _validate_without_cluster(loaded, profile, overrides, engine)
        note = (f"no --cluster: the per-node plan of this {loaded.recipe.parallelism.nodes}-node "
                "recipe needs one and is skipped; memory assumes GB10 nodes (119.6 GiB)")
    memory = plan_memory(memory_request(
        loaded, profile, overrides, node=node_memory(cluster, None),
        engine=engine))
    return PlanWithMemory(serve_plan, memory, note, findings)


def _validate_without_cluster(loaded: LoadedRecipe, profile: str | None,
                              overrides: Mapping[str, ArgValue],
                              engine: EngineAdapter) -> list[Finding]:
    recipe, source = loaded.recipe, loaded.source
    chosen = resolve_profile(recipe, profile, source)
    findings = (validate_recipe(recipe, source, engine)
                + validate_overrides(recipe, chosen, overrides, source, engine))
    raise_on_errors(findings, f"the plan for {recipe.name}")
    return findings
