"""`sm121 bench knee` on the session's tiny engine (its step budget is the agent profile's
2048): both windows per step, steps above the budget dropped. The tune that reads a knee is
in test_tune_flow.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support import TinyEngine, invoke_cli

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def knee(tiny_engine: TinyEngine, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("knee") / "knee.json"
    invoke_cli("bench", "knee", "--url", tiny_engine.base_url, "--chunk", "2048",
               "--steps", "128,512,2048,4096", "--batches", "1,2", "--reps", "2",
               "--decode-tokens", "16", "--out", str(out))
    return out


def test_knee_measures_both_windows_per_step_and_drops_steps_above_the_budget(knee: Path):
    data = json.loads(knee.read_text())
    assert data["status"] == "complete" and data["summary"]["dropped_steps"] == [4096]
    prefill = [s for s in data["samples"] if s["kind"] == "prefill"]
    assert {s["step"] for s in prefill} == {128, 512, 2048}
    assert len(prefill) == 3 * 3  # a warm-up and two measured repetitions per step
    for sample in prefill:
        assert sample["prompt_tokens"] == sample["step"]  # one exact prompt per step
        assert sample["cached_tokens"] == 0  # salted: nothing from the prefix cache
        assert sample["engine_s"] and sample["engine_s"] <= sample["client_s"]
    assert data["summary"]["prefill_cached"] == 0  # the salt checked: the engine counts
    engine = data["summary"]["engine"]
    assert engine["knee"]["knee_at"] in {128, 512, 2048}
    assert [r["n"] for r in engine["prefill"]] == [2, 2, 2]
    assert all(r["median"] for r in engine["decode"])
