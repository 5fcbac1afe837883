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


def test_a_prediction_puts_the_first_probes_either_side_of_it():
    from sm121.bench.tune.capacity import next_probe

    # target 16 met; the pool predicts 39: 35 and 40 (the search's most) come first
    assert next_probe([(16, True)], 40, 4, predicted=39) == 35
    assert next_probe([(16, True), (35, True)], 40, 4, predicted=39) == 40
    # the measurement disagrees (35 missed): bisection between what met and what missed
    assert next_probe([(16, True), (35, False)], 40, 4, predicted=39) == 25
    assert next_probe([(16, True)], 40, 4) == 40  # no prediction: the largest first, as before
