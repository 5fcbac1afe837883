"""Recipe validation: the field's known traps, each named by file, field and allowed values.

Recipe-level rules (parallelism, hooks, profiles) live here; the rules of an engine's flags
live with the engine (its adapter) and are called from here. Render passes the adapter it
rendered with; a caller holding only a recipe (sizing, a test) lets these find it."""

from __future__ import annotations

from collections.abc import Mapping

from sm121.engines.adapter import EngineAdapter
from sm121.engines.registry import adapter_for, has_adapter
from sm121.findings import Finding, Severity
from sm121.plan.effective import profile_args
from sm121.recipes.hook_names import BUILTIN_HOOKS
from sm121.recipes.schema import ArgValue, Recipe


def validate_recipe(recipe: Recipe, source: str,
                    engine: EngineAdapter | None = None) -> list[Finding]:
    if engine is None and has_adapter(recipe.engine.kind):
        engine = adapter_for(recipe.engine.kind)  # a recipe meeting its engine here
    findings = _check_parallelism(recipe, source, engine) + _check_hooks(recipe, source)
    if recipe.default_profile and recipe.default_profile not in recipe.profiles:
        findings.append(_err(source, "default_profile", f"{recipe.default_profile!r} is not a profile",
                             allowed=", ".join(recipe.profiles)))
    if engine is not None:
        findings += engine.check_layer(recipe, recipe.args, recipe.args, None, source, "args",
                                       tool_calling=not recipe.profiles)
        for name, profile in recipe.profiles.items():
            findings += engine.check_layer(recipe, profile.args, profile_args(recipe, name),
                                           profile.purpose, source, f"profiles.{name}.args",
                                           tool_calling=True)
    return _unique(findings)


def validate_overrides(
    recipe: Recipe, profile: str | None, overrides: Mapping[str, ArgValue], source: str,
    engine: EngineAdapter | None = None,
) -> list[Finding]:
    """`--set` values get the same checks as a profile."""
    if not overrides or (engine is None and not has_adapter(recipe.engine.kind)):
        return []
    engine = engine or adapter_for(recipe.engine.kind)  # a recipe meeting its engine here
    args = profile_args(recipe, profile) | dict(overrides)
    return engine.check_layer(recipe, overrides, args, None, "--set", "args", tool_calling=True)


def _check_parallelism(recipe: Recipe, source: str,
                       engine: EngineAdapter | None) -> list[Finding]:
    par = recipe.parallelism
    if engine is not None and engine.one_node and par.nodes > 1:
        # The engine serves one node: its ranks over nodes are not the question.
        return [_err(source, "parallelism.nodes",
                     f"{par.nodes} nodes, but sm121 serves {engine.label} on one node: "
                     f"{engine.one_node}", allowed="1")]
    findings: list[Finding] = []
    gpus = par.nodes * par.gpus_per_node
    if par.tp * par.pp != gpus:
        findings.append(_err(
            source, "parallelism",
            f"tp x pp = {par.tp} x {par.pp} = {par.tp * par.pp} ranks, but nodes x gpus_per_node "
            f"= {par.nodes} x {par.gpus_per_node} = {gpus} GPUs",
            allowed="tp x pp == nodes x gpus_per_node (vLLM's decode-context-parallel reuses "
                    "the TP ranks, so dcp adds no GPUs)",
        ))
    if par.tp % par.dcp:
        findings.append(_err(source, "parallelism.dcp", f"dcp={par.dcp} does not divide tp={par.tp}",
                             allowed=f"a divisor of {par.tp}"))
    return findings


def _check_hooks(recipe: Recipe, source: str) -> list[Finding]:
    findings = []
    where = [("hooks", None)] + [(f"profiles.{p}.hooks", p) for p, spec in recipe.profiles.items()
                                 if spec.hooks is not None]
    for prefix, profile in where:
        hooks = recipe.hooks_for(profile)
        for phase in ("before_serve", "after_ready"):
            for name in getattr(hooks, phase):
                if name not in BUILTIN_HOOKS and name not in hooks.custom:
                    findings.append(_err(
                        source, f"{prefix}.{phase}", f"unknown hook {name!r}",
                        allowed=f"{', '.join(sorted(BUILTIN_HOOKS))}, or a name under hooks.custom",
                    ))
    return findings


def _err(source: str, field: str, message: str, allowed: str = "") -> Finding:
    return Finding(severity=Severity.ERROR, source=source, field=field, message=message,
                   allowed=allowed)


def _unique(findings: list[Finding]) -> list[Finding]:
    seen: dict[tuple[str, str], Finding] = {}
    for f in findings:
        seen.setdefault((f.field, f.message), f)
    return list(seen.values())
