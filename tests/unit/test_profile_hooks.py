"""Hooks per profile: a profile that names its own hooks runs them instead of the recipe's, so
the field's unverified drop-caches mitigation can be A/B'd (`sm121 bench ab` on two profiles
that differ only in hooks); a profile's unknown hook is refused like the recipe's."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from support import invoke_cli

from sm121.plan.validate import validate_recipe
from sm121.recipes.loader import load_recipe

DS4 = "deepseek-v4-flash-eugr-agent"


def hooks_of(*args: str) -> dict:
    return json.loads(invoke_cli("plan", *args, "--json").stdout)["hooks"]


def test_only_the_drop_cache_profile_drops_caches_ds4_booted_without() -> None:
    """The field's drop_caches mitigation is unverified and DS4 booted 1M without it: on by
    default nowhere on DS4; one profile carries it for the A/B."""
    assert hooks_of(DS4, "--profile", "agent")["before_serve"] == []
    assert hooks_of(DS4, "--profile", "agent-drop-cache")["before_serve"] == ["drop-caches"]
    recipe = load_recipe(DS4).recipe
    agent, drop = recipe.profiles["agent"], recipe.profiles["agent-drop-cache"]
    assert agent.args == drop.args  # they differ only in the hook: an A/B of it


def test_laguna_drops_caches_only_where_the_gate_refuses() -> None:
    """Laguna: 32K booted with the page cache kept; 262K was refused (section 6)."""
    assert hooks_of("laguna-s-2.1")["before_serve"] == ["warm-read"]
    assert hooks_of("laguna-s-2.1", "--profile", "production-262k")["before_serve"] == [
        "drop-caches"]


def test_a_profiles_unknown_hook_is_refused(tmp_path: Path) -> None:
    data = load_recipe("tiny-cpu").recipe.model_dump(mode="json", exclude_defaults=True)
    data["profiles"]["agent"]["hooks"] = {"before_serve": ["drop-cache"]}
    path = tmp_path / "recipe.yaml"
    path.write_text(yaml.safe_dump(data))
    loaded = load_recipe(str(path))
    (finding,) = [f for f in validate_recipe(loaded.recipe, loaded.source)
                  if f.severity.value == "error"]
    assert finding.field == "profiles.agent.hooks.before_serve"
    assert "drop-caches" in finding.allowed
