"""Bounded input: a stranger's recipe, cluster file or model config cannot make sm121 build
or compute something huge, and what YAML resolves silently is an error. Each case through
the real command line: refused (exit 2, no traceback, the field or the construct named),
quickly and in little memory."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from support import invoke_cli

TINY = "model: {id: m, source: tiny}\n"


def alias_bomb(levels: int) -> str:
    """The issue's alias bomb: `levels` levels of nine references each (9^levels leaves),
    in a field the schema reads (a refusal that quotes the value expands it)."""
    return "name: bomb\n" + TINY + "description:\n  - &a0 [lol]\n" + "".join(
        f"  - &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]\n" for i in range(1, levels + 1))


ALIAS_BOMB = alias_bomb(9)


def _env(tmp_path: Path) -> dict[str, str]:
    return {"HOME": str(tmp_path), "SM121_HOME": str(tmp_path / "sm121")}


def _plan(tmp_path: Path, text: str, *more: str) -> tuple[int, str, float]:
    path = tmp_path / "r.yaml"
    path.write_text(text)
    began = time.perf_counter()
    result = invoke_cli("plan", str(path), *more, check=False, env=_env(tmp_path))
    return result.returncode, result.stdout + result.stderr, time.perf_counter() - began


def _refused(code: int, text: str, *named: str) -> None:
    assert code == 2, text[:2000]
    assert "Traceback" not in text and len(text) < 4000, text[:2000]
    for name in named:
        assert name in text, text


def test_the_alias_bomb_is_refused_at_its_first_alias(tmp_path: Path) -> None:
    assert len(ALIAS_BOMB) < 700
    code, text, _ = _plan(tmp_path, ALIAS_BOMB)
    _refused(code, text, "alias *a0")


def test_a_single_alias_is_refused_too(tmp_path: Path) -> None:
    code, text, _ = _plan(tmp_path, "name: a\n" + TINY + "description: &d hi\nenv: {X: *d}\n")
    _refused(code, text, "alias *d")


def test_a_recipe_over_1_mb_is_refused_unread(tmp_path: Path) -> None:
    code, text, _ = _plan(tmp_path, "name: big\n" + TINY + "description: " + "x" * (1 << 20)
                          + "\n")
    _refused(code, text, "over 1 MB")


def test_a_cluster_file_over_1_mb_is_refused(tmp_path: Path) -> None:
    cluster = tmp_path / "c.yaml"
    cluster.write_text("name: c\nhead: n1\nnodes: [{name: n1}]\n# " + "x" * (1 << 20) + "\n")
    result = invoke_cli("plan", "tiny-cpu", "--cluster", str(cluster), check=False,
                        env=_env(tmp_path))
    _refused(result.returncode, result.stdout + result.stderr, "over 1 MB")


@pytest.mark.parametrize(("text", "field"), [
    ("parallelism: {nodes: 100000000}\n", "parallelism.nodes"),
    ("parallelism: {nodes: 100000000, tp: 100000000}\n", "parallelism.nodes"),
    ("parallelism: {tp: 100000000, nodes: 1}\n", "parallelism.tp"),
    ("parallelism: {gpus_per_node: 100000000}\n", "parallelism.gpus_per_node"),
    ("model: {id: m, source: tiny, size_gb: 1.0e+300}\n", "model.size_gb"),
    ("readiness: {max_tokens: 100000000000}\n", "readiness.max_tokens"),
], ids=["nodes", "nodes-and-tp", "tp", "gpus_per_node", "size_gb", "max_tokens"])
def test_numbers_beyond_physical_limits_are_refused_by_the_schema(
        text: str, field: str, tmp_path: Path) -> None:
    """`parallelism: {nodes: 100000000}` grew past 5.7 GB: refused by the schema now."""
    base = "name: huge\n" + ("" if text.startswith("model:") else TINY)
    code, out, _ = _plan(tmp_path, base + text)
    _refused(code, out, field)


@pytest.mark.parametrize("value", [".nan", ".inf", "-.inf", ".NaN"])
def test_nan_and_infinity_are_refused_by_name(value: str, tmp_path: Path) -> None:
    """`size_gb: .nan` crashed `plan --memory`."""
    code, text, _ = _plan(tmp_path, f"name: nan\nmodel: {{id: m, source: tiny, size_gb: {value}}}\n",
                          "--memory")
    _refused(code, text, "model.size_gb", "NaN and infinity are refused")


def test_nan_in_an_engine_arg_is_refused(tmp_path: Path) -> None:
    code, text, _ = _plan(tmp_path, "name: nan\n" + TINY + "args: {gpu-memory-utilization: .nan}\n")
    _refused(code, text, "args", "NaN")


def test_a_model_config_with_1e8_layers_is_refused(tmp_path: Path) -> None:
    """A local config.json with num_hidden_layers 1e8 took 2.2 GB in `plan --memory`."""
    model = tmp_path / ".cache" / "model"
    model.mkdir(parents=True)
    (model / "config.json").write_text(json.dumps({
        "model_type": "llama", "num_hidden_layers": 100_000_000, "num_attention_heads": 8,
        "hidden_size": 64}))
    code, text, seconds = _plan(tmp_path, f"name: layers\nmodel: {{id: m, source: path, "
                                f"path: {model}}}\n", "--memory")
    _refused(code, text, "num_hidden_layers", "4096")


def test_a_model_config_with_nan_is_refused(tmp_path: Path) -> None:
    model = tmp_path / ".cache" / "model"
    model.mkdir(parents=True)
    (model / "config.json").write_text('{"model_type": "llama", "num_hidden_layers": NaN}')
    code, text, _ = _plan(tmp_path, f"name: layers\nmodel: {{id: m, source: path, "
                          f"path: {model}}}\n", "--memory")
    _refused(code, text, "NaN")


def test_a_duplicate_key_is_an_error_naming_both_lines(tmp_path: Path) -> None:
    code, text, _ = _plan(tmp_path, "name: a\n" + TINY + "description: one\ndescription: two\n")
    _refused(code, text, "'description' twice", "first on line 3", "line 4")


def test_a_duplicate_key_in_a_cluster_file_is_an_error(tmp_path: Path) -> None:
    cluster = tmp_path / "c.yaml"
    cluster.write_text("name: c\nhead: n1\nnodes: [{name: n1, ssh: a, ssh: b}]\n")
    result = invoke_cli("plan", "tiny-cpu", "--cluster", str(cluster), check=False,
                        env=_env(tmp_path))
    _refused(result.returncode, result.stdout + result.stderr, "'ssh' twice")


def test_two_spellings_of_one_flag_in_a_recipe_are_an_error_naming_both(tmp_path: Path) -> None:
    code, text, _ = _plan(tmp_path, "name: a\n" + TINY
                          + "args: {max_num_seqs: 4, max-num-seqs: 8}\n")
    _refused(code, text, "'max_num_seqs'", "'max-num-seqs'")


def test_two_spellings_in_a_profile_are_an_error_too(tmp_path: Path) -> None:
    code, text, _ = _plan(tmp_path, "name: a\n" + TINY + "default_profile: p\nprofiles:\n"
                          "  p: {purpose: x, args: {--max-num-seqs: 4, max_num_seqs: 8}}\n")
    _refused(code, text, "'--max-num-seqs'", "'max_num_seqs'")
