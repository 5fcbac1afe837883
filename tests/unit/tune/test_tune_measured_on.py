"""The tuned profile records where its capacity was measured, and the recipe reads it back."""

from __future__ import annotations

from pathlib import Path

from sm121.bench.tune.recipe_write import TunedProfile, check, with_tuned
from sm121.recipes.schema import MeasuredOn

RECIPE = Path(__file__).resolve().parents[3] / "src" / "sm121" / "recipes" / "builtin" / \
    "gpu-llama.yaml"


def test_the_written_profile_carries_device_pool_and_workload():
    on = MeasuredOn(device="NVIDIA H200", pool_tokens=779_312,
                    workload="coding-agent-with-batch", agents=28)
    profile = TunedProfile("chunk-4096", {"max-num-batched-tokens": 4096, "max-num-seqs": 41},
                           {}, ["chosen"], on)
    text = with_tuned(RECIPE.read_text(), profile, "gpu-llama")
    assert check(text, profile, "gpu-llama").profiles["tuned"].measured_on == on
    without = TunedProfile("chunk-4096", {"max-num-seqs": 41}, {}, ["chosen"])
    assert "measured_on" not in with_tuned(RECIPE.read_text(), without, "gpu-llama")
