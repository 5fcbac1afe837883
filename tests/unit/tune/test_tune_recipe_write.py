"""The `tuned` profile written into the user's recipe: a comment per value, the user's own
text kept, a rerun replacing its block, the built-in never touched (sm121/bench/tune)."""

from importlib import resources

import pytest
import yaml

from sm121.bench.tune.recipe_write import BEGIN, TunedProfile, with_tuned, write_tuned
from sm121.errors import Sm121Error
from sm121.recipes.loader import load_recipe

PROFILE = TunedProfile(
    "t-lpt-1024 chosen by sm121 tune", {"max-num-batched-tokens": 2048,
                                       "long-prefill-token-threshold": 1024,
                                       "max-num-seqs": 9, "enforce-eager": True},
    {"max-num-batched-tokens": "prefill knee 2048 tokens/step (9,600 tok/s)",
     "long-prefill-token-threshold": "goodput 100% (3 reps)\nsecond line folded"},
    ["Measured on CPU x86_64 x2, vLLM 0.32.0, 2026-12-02; report tune/report.md."])


def _builtin(name: str) -> str:
    return resources.files("sm121.recipes").joinpath(f"builtin/{name}.yaml").read_text()


def test_tuned_goes_into_a_user_copy_with_a_comment_per_value_and_the_builtin_is_untouched(
        tmp_path, monkeypatch):
    monkeypatch.setenv("SM121_HOME", str(tmp_path))
    before = _builtin("tiny-cpu")
    path = write_tuned("tiny-cpu", before, PROFILE)
    assert path == tmp_path / "recipes" / "tiny-cpu.yaml"
    assert _builtin("tiny-cpu") == before
    text = path.read_text()
    lines = text.splitlines()
    at = lines.index("      max-num-batched-tokens: 2048")
    assert lines[at - 1] == "      # prefill knee 2048 tokens/step (9,600 tok/s)"
    assert "      # goodput 100% (3 reps) second line folded" in lines
    assert "# Measured on CPU x86_64 x2, vLLM 0.32.0" in text
    loaded = load_recipe("tiny-cpu")
    assert not loaded.builtin and loaded.source == str(path)
    assert loaded.recipe.profiles["tuned"].args["long-prefill-token-threshold"] == 1024
    assert loaded.recipe.profiles["tuned"].args["enforce-eager"] is True
    assert set(loaded.recipe.profiles) == set(yaml.safe_load(before)["profiles"]) | {"tuned"}
    assert "Eager mode: no torch.compile" in text  # the recipe's own comments are kept


def test_a_rerun_replaces_its_block_and_keeps_the_users_edits(tmp_path, monkeypatch):
    monkeypatch.setenv("SM121_HOME", str(tmp_path))
    path = write_tuned("tiny-cpu", _builtin("tiny-cpu"), PROFILE)
    path.write_text(path.read_text().replace("# The embedded default:", "# my note\n# The embedded default:"))
    again = TunedProfile("second", {"max-num-batched-tokens": 4096}, {}, [])
    write_tuned("tiny-cpu", _builtin("tiny-cpu"), again)
    text = path.read_text()
    assert text.count(BEGIN) == 1 and "# my note" in text
    assert load_recipe("tiny-cpu").recipe.profiles["tuned"].args == {"max-num-batched-tokens": 4096}


def test_a_users_own_tuned_profile_or_inline_profiles_are_refused():
    clash = _builtin("tiny-cpu").replace("profiles:\n", "profiles:\n  tuned:\n    purpose: mine\n")
    with pytest.raises(Sm121Error, match="already has a profile 'tuned'"):
        with_tuned(clash, PROFILE, "x.yaml")
    inline = "name: x\nprofiles: {agent: {purpose: p}}\n"
    with pytest.raises(Sm121Error, match="inline"):
        with_tuned(inline, PROFILE, "x.yaml")


def test_a_strangers_text_in_a_comment_or_the_purpose_is_spelled_out_and_the_file_reads(
        tmp_path, monkeypatch):
    """The header, the comments and the purpose quote what tune read back (a device, an arm's
    reason): a control character PyYAML refuses anywhere in a file is spelled out, a line
    break in any spelling folds to a space, and a string value with DEL reads back as it was."""
    monkeypatch.setenv("SM121_HOME", str(tmp_path))
    hostile = "H200\x1b]0;pwn\x07\x7f\x00\u2028x:\x85y\u202e\ufeff"
    profile = TunedProfile(f"p {hostile}", {"max-num-seqs": 9, "served-model-name": "a\x7fb"},
                           {"max-num-seqs": hostile}, [f"Sitting: {hostile}", "a" * 5000])
    text = write_tuned("tiny-cpu", _builtin("tiny-cpu"), profile).read_text()
    spelled = "H200\\x1b]0;pwn\\x07\\x7f\\x00 x: y\\u202e\\ufeff"
    assert f"  # Sitting: {spelled}\n" in text and f"      # {spelled}\n" in text
    assert "…(4000 more characters)" in text  # a comment line is bounded
    assert all(c.isprintable() or c == "\n" for c in text)
    tuned = load_recipe("tiny-cpu").recipe.profiles["tuned"]
    assert tuned.args["served-model-name"] == "a\x7fb"
    assert tuned.purpose == f"p {spelled}"
