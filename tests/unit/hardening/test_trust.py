"""--trust: built-in recipes are trusted; the same recipe from a file is not, and plan and
serve name every item it needs trust for."""

from __future__ import annotations

import time
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


def test_args_render_as_one_token_each_and_false_only_where_the_engine_has_a_no_form() -> None:
    from sm121.engines.vllm.args import render_args

    known = frozenset({"enforce-eager", "no-enforce-eager", "disable-log-stats"})
    argv = render_args({"enforce-eager": False, "disable-log-stats": False, "max-num-seqs": 6,
                        "tool-call-parser": "a --trust-remote-code", "seed": None}, known)
    assert argv == ["--no-enforce-eager", "--max-num-seqs=6",
                    "--tool-call-parser=a --trust-remote-code"]


def test_the_start_line_ends_envs_options_before_the_assignments(tmp_path: Path) -> None:
    """An assignment (even one a recipe could never load) is never an option of `env`."""
    import subprocess

    from sm121.launch import runtimes

    files = runtimes.NodeFiles(run_dir=str(tmp_path / "run"))
    script = runtimes.native_start_script(["true"], {"A": "1"}, files)
    assert " env -- A=1 true " in script
    mark = tmp_path / "MARK"
    line = script.replace(" A=1 ", " " + runtimes.q(f"--split-string=sh -c 'touch {mark}' x") + " ")
    subprocess.run(["sh", "-c", line], check=True, capture_output=True, timeout=30)
    time.sleep(1)  # the engine runs in the background: give a payload time to show
    assert not mark.exists()
    subprocess.run(["sh", "-c", line.replace(" env -- ", " env ")], check=True,
                   capture_output=True, timeout=30)
    for _ in range(50):  # main's line, without `--`: the payload runs
        if mark.exists():
            break
        time.sleep(0.1)
    assert mark.exists()


def test_env_keys_are_checked_at_load_for_every_recipe(tmp_path: Path) -> None:
    from sm121.recipes.loader import load_recipe

    recipe = tmp_path / "r.yaml"
    recipe.write_text("name: r\nmodel: {id: m, source: tiny}\nenv: {'--split-string': x}\n")
    with pytest.raises(Sm121Error, match="env names"):
        load_recipe(str(recipe))


def test_a_clean_foreign_recipe_needs_nothing_and_one_that_asks_is_listed(tmp_path: Path) -> None:
    recipe = tmp_path / "r.yaml"
    recipe.write_text("name: r\nmodel: {id: m, source: tiny}\n"
                      "args: {max-num-seqs: 4, enable-prefix-caching: true}\n"
                      "env: {NCCL_DEBUG: INFO, VLLM_CPU_KVCACHE_SPACE: '2', HF_TOKEN: '${HF_TOKEN}'}\n")
    from sm121.plan.trust import trust_needs
    from sm121.recipes.loader import load_recipe

    assert trust_needs(load_recipe(str(recipe)).recipe, None, builtin=False) == []
    recipe.write_text("name: r\nmodel: {id: m, source: tiny}\n"
                      "args: {max-num-seqs: '4', trust-remote-cod: true}\n"
                      "env: {NCCL_NET_PLUGIN: x, NCCL_DEBUG: '${HOME}'}\n")
    needs = trust_needs(load_recipe(str(recipe)).recipe, None, builtin=False)
    assert [n.split(":")[0] for n in needs] == [
        "args.max-num-seqs", "args.trust-remote-cod (vLLM reads it as --trust-remote-code)",
        "env.NCCL_NET_PLUGIN", "env.NCCL_DEBUG"]
