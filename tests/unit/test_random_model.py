"""`sm121 model random` and the built-in GPU testbed recipe that serves its llama-8b output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support import invoke_cli

from sm121.errors import Sm121Error
from sm121.models.random_model import SHAPES, generate_random_model
from sm121.plan.build import build_plan


def test_the_tiny_shape_is_written_once_and_reused(tmp_path: Path) -> None:
    out = json.loads(invoke_cli("model", "random", str(tmp_path / "m"), "--shape", "tiny",
                             "--device", "cpu", "--json").stdout)
    assert out["shape"] == "tiny" and out["device"] == "cpu" and not out["reused"]
    folder = Path(out["path"])
    config = json.loads((folder / "config.json").read_text())
    for key, value in SHAPES["tiny"].items():
        assert config[key] == value, key
    assert (folder / "tokenizer.json").is_file() and list(folder.glob("*.safetensors"))
    again = generate_random_model("tiny", folder)
    assert again.reused and again.path == folder
    with pytest.raises(Sm121Error, match="holds a tiny model, not llama-8b"):
        generate_random_model("llama-8b", folder)


def test_refuses_a_folder_it_did_not_write_and_an_unknown_shape(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(Sm121Error, match="not a model sm121 generated"):
        generate_random_model("tiny", tmp_path)
    with pytest.raises(Sm121Error, match="shapes: tiny, llama-1b, llama-8b"):
        generate_random_model("llama-70b", tmp_path / "x")


def test_the_gpu_recipe_serves_the_random_llama_8b_under_sm121_home(sm121_home: Path) -> None:
    plan = build_plan("gpu-llama", "lpt-256")
    argv = plan.nodes[0].argv
    assert argv[argv.index("--model") + 1] == str(sm121_home / "models" / "llama-8b")
    assert "--long-prefill-token-threshold=256" in argv
    # vLLM 0.21.0 has a bundled flag list: no version warning, no unknown flag.
    assert [f for f in plan.findings if f.field == "engine.version"] == []
    for profile in ("batch", "agent", "agent-admission", "lpt-512", "lpt-256"):
        assert build_plan("gpu-llama", profile).engine_args["max-num-batched-tokens"] in (2048, 8192)
