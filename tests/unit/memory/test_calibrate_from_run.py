"""Calibration from the run directory alone: a run keeps its recipe with its plan, so a recipe
given by path calibrates after the file is gone (the GPU testbed's "no recipe named
'gpu-llama'"). The run is the GPU testbed's cold start: its real engine log, the plan sm121
renders for it, and a model folder of the same shape (config.json, weight files of the real
sizes, sparse)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from support import invoke_cli

from sm121.models.random_model import SHAPES
from sm121.plan.build import build_plan
from sm121.runs.state import (
    NodeProcess,
    RunInfo,
    Timings,
    create_run_dir,
    save_launch,
)
from sm121.sizing.run_check import load_run_recipe

FIXTURES = Path(__file__).parents[2] / "fixtures" / "startup"
SHARD_BYTES = (4_976_698_672, 4_999_802_720, 4_007_681_544)  # 13.01 GiB, as vLLM logged


def _model(folder: Path) -> Path:
    folder.mkdir(parents=True)
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 512,
              "dtype": "bfloat16", "tie_word_embeddings": False, **SHAPES["llama-8b"]}
    (folder / "config.json").write_text(json.dumps(config))
    for index, size in enumerate(SHARD_BYTES, 1):
        with open(folder / f"model-0000{index}-of-00003.safetensors", "wb") as shard:
            shard.truncate(size)
    return folder


def _path_recipe(tmp_path: Path, model: Path) -> Path:
    data = yaml.safe_load(_builtin_text("gpu-llama"))
    data["name"] = "gpu-llama-testbed"  # no built-in has this name: only the path finds it
    data["model"]["path"] = str(model)
    path = tmp_path / "recipes" / "gpu-llama-testbed.yaml"
    path.parent.mkdir()
    path.write_text(yaml.safe_dump(data))
    return path


def _builtin_text(name: str) -> str:
    from importlib import resources

    return resources.files("sm121.recipes").joinpath(f"builtin/{name}.yaml").read_text()


def _run_from(recipe_path: Path, run_id: str) -> Path:
    plan = build_plan(str(recipe_path), "agent")
    folder = create_run_dir(run_id)
    save_launch(folder, plan, {"local": plan.nodes[0].argv})
    shutil.copy(FIXTURES / "gpu-h200-cold" / "engine.log", folder / "engine.log")
    RunInfo(run_id=run_id, recipe=plan.recipe, profile=plan.profile,
            created="2026-12-01T06:29:24+00:00", base_url=plan.base_url, model="llama8b-random",
            status="stopped", nodes=[NodeProcess(name="local", log=str(folder / "engine.log"),
                                                 pid_file=str(folder / "engine.pid"))],
            timings=Timings(process_started_s=0.01, port_open_s=171.75,
                            first_generation_s=172.47)).save()
    return folder


def test_a_path_recipe_run_calibrates_after_the_file_is_gone(
        tmp_path: Path, sm121_home: Path) -> None:
    recipe_path = _path_recipe(tmp_path, _model(tmp_path / "llama-8b"))
    folder = _run_from(recipe_path, "gpu-llama-testbed-agent-20261201-062924-e7ff")
    recipe_path.unlink()
    assert load_run_recipe(folder).recipe.name == "gpu-llama-testbed"
    out = invoke_cli("memory", "calibrate", folder.name, "--node-gib", "140.4", "--json").stdout
    (check,) = json.loads(out)
    assert check["observed_tokens"] == 781_552  # "GPU KV cache size: 781,552 tokens"
    assert abs(check["error_pct"]) < 1.0, check  # the planner, uncalibrated, within 1%
    observed = json.loads(invoke_cli("memory", "observed", "gpu-llama-testbed", "--json").stdout)
    assert [o["source"] for o in observed] == [folder.name]
    assert observed[0]["gmu"] == 0.78 and observed[0]["batched_tokens"] == 2048


def test_a_run_from_before_plans_kept_the_recipe_uses_its_name(sm121_home: Path) -> None:
    plan = build_plan("tiny-cpu", "agent")
    folder = create_run_dir("tiny-cpu-agent-20261201-000000-0001")
    save_launch(folder, plan, {"local": plan.nodes[0].argv})
    data = json.loads((folder / "plan.json").read_text())
    for key in ("recipe_spec", "recipe_source"):
        data.pop(key)
    (folder / "plan.json").write_text(json.dumps(data))
    assert load_run_recipe(folder).source == "builtin:tiny-cpu.yaml"
    data["recipe"] = "gone-recipe"
    (folder / "plan.json").write_text(json.dumps(data))
    with pytest.raises(Exception, match="no recipe named 'gone-recipe'"):
        load_run_recipe(folder)
