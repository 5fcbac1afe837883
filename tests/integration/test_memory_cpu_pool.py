"""The planner against vLLM's own KV pool on the CPU testbed, for three configurations that
differ in KV space, block size and KV dtype: within 2% (the arithmetic matches to the token).

Boots: the session engine (KV 2 GiB, block 128, bf16, max-model-len 65536) plus two more,
one at a time, each stopped once calibrated."""

from __future__ import annotations

import json
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

import pytest
import yaml
from support import TinyEngine, free_port, run_cli

pytestmark = pytest.mark.integration


def _fp8_kv_supported() -> bool:
    """vLLM's CPU backend stores fp8 KV only on x86 with AVX-512 or AMX."""
    import torch

    return bool(torch.cpu._is_avx512_supported() or torch.cpu._is_amx_tile_supported())


# Config B: same KV space, smaller blocks and a 1-byte KV dtype (4-byte float32 KV where fp8
# is not supported): the pool changes by the dtype's size, not the space.
B_SETS = (["--set", "block-size=64", "--set", "kv-cache-dtype=fp8"] if _fp8_kv_supported()
          else ["--set", "block-size=64", "--set", "dtype=float32"])
# Config C: half the KV space (a user recipe whose env sets VLLM_CPU_KVCACHE_SPACE=1), blocks
# of 96 and a max-model-len off the block grid, so whole-block rounding shows in the count.
C_SETS = ["--set", "block-size=96", "--set", "max-model-len=50000"]


def _user_recipe(home: Path) -> str:
    text = resources.files("sm121.recipes").joinpath("builtin/tiny-cpu.yaml").read_text()
    recipe = yaml.safe_load(text)
    recipe["name"] = "tiny-cpu-kv1"
    recipe["env"]["VLLM_CPU_KVCACHE_SPACE"] = "1"
    (home / "recipes").mkdir(exist_ok=True)
    (home / "recipes" / "tiny-cpu-kv1.yaml").write_text(yaml.safe_dump(recipe))
    return "tiny-cpu-kv1"


def _boot(home: Path, recipe: str, sets: list[str]) -> str:
    before = set((home / "runs").glob("*"))
    run_cli("serve", recipe, "--profile", "agent", "--port", str(free_port()), *sets,
            timeout=900)
    (run_dir,) = set((home / "runs").glob("*")) - before
    return run_dir.name


def _calibrate(run_id: str) -> dict:
    (check,) = json.loads(run_cli("memory", "calibrate", run_id, "--json").stdout)
    return check


@pytest.fixture(scope="module")
def checks(tiny_engine: TinyEngine, sm121_home: Path) -> Iterator[list[dict]]:
    """Calibrate each configuration right after its boot, then stop it: at most two engines
    (the session's and one more) ever run at once."""
    results = [_calibrate(tiny_engine.run_id)]
    for recipe, sets in (("tiny-cpu", B_SETS), (_user_recipe(sm121_home), C_SETS)):
        run_id = _boot(sm121_home, recipe, sets)
        try:
            results.append(_calibrate(run_id))
        finally:
            run_cli("stop", run_id, check=False)
    yield results


def test_predicted_pool_within_two_percent_for_each_configuration(checks: list[dict]) -> None:
    assert len(checks) == 3
    observed = {c["observed_tokens"] for c in checks}
    assert len(observed) == 3, "the three configurations must give three different pools"
    for check in checks:
        assert check["observed_tokens"], check
        assert abs(check["error_pct"]) < 2.0, check
        assert check["predicted_concurrency"] == pytest.approx(check["observed_concurrency"],
                                                               rel=0.02)


def test_calibrated_boots_show_up_in_the_memory_plan(checks: list[dict]) -> None:
    plan = json.loads(run_cli("memory", "plan", "tiny-cpu", "--profile", "agent", "--json").stdout)
    sources = {c["source"] for c in plan["comparisons"] if c["observed_tokens"]}
    assert {c["run_id"] for c in checks[:2]} <= sources
    table = run_cli("memory", "calibrate", *[c["run_id"] for c in checks]).stdout
    assert "KV pool: planner against vLLM's log" in table
