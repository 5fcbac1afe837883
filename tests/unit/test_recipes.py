"""The recipe schema, the built-in recipes, and validation of the field's known traps."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from sm121.errors import Sm121Error
from sm121.findings import Severity, errors
from sm121.plan.validate import validate_recipe
from sm121.recipes.loader import builtin_names, load_recipe

EXPECTED_BUILTINS = {
    "deepseek-v4-flash-eugr-agent", "deepseek-v4-flash-eugr", "deepseek-v4-flash-src",
    "deepseek-v4-flash", "glm-5.2", "laguna-s-2.1", "tiny-cpu",
}


def write_recipe(tmp_path: Path, **changes: object) -> str:
    """The tiny-cpu recipe with some fields replaced, written as a user file."""
    data = load_recipe("tiny-cpu").recipe.model_dump(mode="json", exclude_defaults=True)
    for dotted, value in changes.items():
        target = data
        *parents, leaf = dotted.split("__")
        for key in parents:
            target = target.setdefault(key, {})
        target[leaf] = value
    path = tmp_path / "recipe.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def findings_for(path: str) -> list:
    loaded = load_recipe(path)
    return validate_recipe(loaded.recipe, loaded.source)


def test_every_builtin_recipe_loads_without_errors() -> None:
    assert set(builtin_names()) >= EXPECTED_BUILTINS
    for name in builtin_names():
        loaded = load_recipe(name)
        assert errors(validate_recipe(loaded.recipe, loaded.source)) == [], name


def test_throughput_baseline_keeps_its_values_and_only_warns() -> None:
    loaded = load_recipe("deepseek-v4-flash")
    assert loaded.recipe.args["max-num-batched-tokens"] == 16536
    assert loaded.recipe.args["gpu-memory-utilization"] == 0.84
    findings = validate_recipe(loaded.recipe, loaded.source)
    # The engine is 0.21.1rc1 + an overlay: checked against the bundled 0.21.0 list, with a
    # warning that names both versions (tests/unit/test_vllm_flags.py).
    (version,) = [f for f in findings if f.field == "engine.version"]
    assert "0.21.1rc1" in version.message and "0.21.0" in version.message
    findings = [f for f in findings if f.field != "engine.version"]
    assert [f.severity for f in findings] == [Severity.WARNING]
    assert "gpu-memory-utilization" in findings[0].field


def test_agent_and_batch_profiles_have_a_purpose() -> None:
    for name in ("deepseek-v4-flash-eugr-agent", "tiny-cpu"):
        profiles = load_recipe(name).recipe.profiles
        assert {"agent", "batch"} <= set(profiles)
        assert all(p.purpose for p in profiles.values())


def test_unknown_field_names_file_field_and_allowed_keys(tmp_path: Path) -> None:
    path = write_recipe(tmp_path, runtime__imagee="x")
    with pytest.raises(Sm121Error) as caught:
        load_recipe(path)
    message = str(caught.value)
    assert path in message and "runtime.imagee" in message
    assert "allowed:" in message and "image" in message


def test_wrong_type_names_the_field(tmp_path: Path) -> None:
    path = write_recipe(tmp_path, parallelism__tp="two")
    with pytest.raises(Sm121Error, match=r"parallelism\.tp"):
        load_recipe(path)


def test_gmu_above_ceiling_is_an_error_with_allowed_values(tmp_path: Path) -> None:
    path = write_recipe(tmp_path, limits__gmu_ceiling=0.78,
                        profiles__agent__args={"gpu-memory-utilization": 0.80})
    (finding,) = errors(findings_for(path))
    assert finding.field == "profiles.agent.args.gpu-memory-utilization"
    assert finding.allowed == "<= 0.78" and finding.source == path


def test_speculative_k7_is_rejected(tmp_path: Path) -> None:
    path = write_recipe(tmp_path, speculative={"k": 7},
                        limits__speculative_k_rule="le5-or-multiple-of-5")
    (finding,) = errors(findings_for(path))
    assert finding.field == "speculative.k"
    assert "multiple of 5" in finding.allowed


@pytest.mark.parametrize("k", [1, 5, 10, 15])
def test_legal_speculative_k_passes(tmp_path: Path, k: int) -> None:
    path = write_recipe(tmp_path, speculative={"k": k},
                        limits__speculative_k_rule="le5-or-multiple-of-5")
    assert errors(findings_for(path)) == []


def test_parallelism_that_does_not_fit_the_nodes(tmp_path: Path) -> None:
    path = write_recipe(tmp_path, parallelism={"tp": 4, "pp": 2, "dcp": 1, "nodes": 2})
    (finding,) = errors(findings_for(path))
    assert finding.field == "parallelism" and "4 x 2 = 8" in finding.message


def test_dcp_must_divide_tp(tmp_path: Path) -> None:
    path = write_recipe(tmp_path, parallelism={"tp": 4, "dcp": 3, "nodes": 4})
    (finding,) = errors(findings_for(path))
    assert finding.field == "parallelism.dcp"


def test_profile_with_unknown_arg_suggests_the_close_flag(tmp_path: Path) -> None:
    path = write_recipe(tmp_path, profiles__agent__args={"max-num-batched-tokns": 2048})
    (finding,) = errors(findings_for(path))
    assert finding.field == "profiles.agent.args.max-num-batched-tokns"
    assert "max-num-batched-tokens" in finding.allowed


def test_underscores_and_dashes_name_the_same_flag(tmp_path: Path) -> None:
    path = write_recipe(tmp_path, profiles__agent__args={"max_num_seqs": 4})
    assert load_recipe(path).recipe.profiles["agent"].args == {"max-num-seqs": 4}


def test_derived_capture_size_must_not_be_typed(tmp_path: Path) -> None:
    path = write_recipe(tmp_path, speculative={"k": 5},
                        profiles__agent__args={"max-num-seqs": 6, "max-cudagraph-capture-size": 36})
    (finding,) = errors(findings_for(path))
    assert "derived" in finding.message


def test_flags_owned_by_sm121_are_refused(tmp_path: Path) -> None:
    path = write_recipe(tmp_path, args={"port": 9000, "max-model-len": 65536})
    (finding,) = errors(findings_for(path))
    assert finding.field == "args.port"


def test_unknown_hook_is_refused(tmp_path: Path) -> None:
    path = write_recipe(tmp_path, hooks={"before_serve": ["drop-cache"]})
    (finding,) = errors(findings_for(path))
    assert finding.field == "hooks.before_serve" and "drop-caches" in finding.allowed


def test_unknown_recipe_lists_the_known_ones() -> None:
    with pytest.raises(Sm121Error) as caught:
        load_recipe("no-such-recipe")
    assert "tiny-cpu" in caught.value.hint


def test_invalid_yaml_is_reported_with_the_file(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("name: [unclosed\n")
    with pytest.raises(Sm121Error, match="not valid YAML"):
        load_recipe(str(path))
