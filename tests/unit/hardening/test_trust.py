"""--trust: built-in recipes are trusted; the same recipe from a file is not, and plan and
serve name every item it needs trust for."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest

from sm121.errors import Sm121Error
from sm121.launch.local import preflight
from sm121.plan.build import build_plan
from sm121.recipes.loader import builtin_names

AGENT = "deepseek-v4-flash-eugr-agent"


@pytest.mark.parametrize("name", builtin_names())
def test_built_in_recipes_need_no_trust(name: str) -> None:
    from sm121.recipes.loader import load_recipe

    recipe = load_recipe(name).recipe
    profile = recipe.default_profile or next(iter(recipe.profiles), None)
    assert build_plan(name, profile).needs_trust == []


def test_a_built_in_recipe_copied_to_a_file_lists_what_it_needs_trust_for(tmp_path: Path) -> None:
    copy = tmp_path / "builtin:copy.yaml"  # a name that looks built in is not
    copy.write_text(resources.files("sm121.recipes").joinpath(f"builtin/{AGENT}.yaml").read_text())
    needs = build_plan(str(copy), "agent").needs_trust
    # The HF and vLLM caches under ~/.cache are the user's own: their mounts need no trust.
    assert [n.split(":")[0] for n in needs] == ["runtime.image", "args.trust-remote-code"]
    assert needs[0].startswith("runtime.image: runs the image eugr/spark-vllm-b12x:sm121")


def test_serve_refuses_before_anything_starts(tmp_path: Path) -> None:
    recipe = tmp_path / "foreign.yaml"
    recipe.write_text("name: foreign\nmodel: {id: m, source: path, path: /m}\n"
                      "env: {LD_PRELOAD: /tmp/evil.so}\n")
    plan = build_plan(str(recipe))
    with pytest.raises(Sm121Error, match="env.LD_PRELOAD") as caught:
        preflight(plan, lambda _: None, trust=False)
    assert "--trust" in caught.value.hint
