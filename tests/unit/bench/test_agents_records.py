"""The typed agents records keep the results file's shape: every committed agents run's
turns, config and summary read into the models and write back the same keys and values, so
older files stay readable and new ones look the same (sm121/bench/scenarios/agents/models.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sm121.bench.scenarios.agents.models import AgentsSummary, TurnSample, read_run
from sm121.bench.scenarios.agents.summary import summarize_run

RESULTS = Path(__file__).resolve().parents[3] / "docs" / "results"
AGENT_RUNS = sorted(p for p in RESULTS.rglob("agents-*.json")
                    if json.loads(p.read_text()).get("scenario") == "agents")


def test_there_are_committed_agents_runs_to_check():
    assert len(AGENT_RUNS) >= 3


@pytest.mark.parametrize("path", AGENT_RUNS, ids=lambda p: p.name)
def test_a_committed_run_round_trips_through_the_models(path: Path):
    data = json.loads(path.read_text())
    turns = [s for s in data["samples"] if s.get("kind") in ("turn", "background")]
    assert turns
    for sample in turns:
        assert TurnSample.model_validate(sample).to_record() == sample
    run = read_run(data["samples"])
    assert len(run.turns) == sum(s.get("kind") == "turn" for s in data["samples"])
    # the stored summary is what this sm121 computes from the raw turns, key for key (up to
    # a float's last bits, where a recompute differs from the stored file on main as well)
    recomputed = summarize_run(read_run(data["samples"])).model_dump(exclude_unset=True)
    assert set(recomputed) <= set(data["summary"])
    stored = json.loads(json.dumps({k: v for k, v in data["summary"].items()
                                    if k in recomputed}))
    recomputed = json.loads(json.dumps(recomputed))
    for found in (recomputed, stored):
        _without_uncounted_reuse(found, run.turns)
    _same(recomputed, stored)
    # and the stored summary as a whole reads into the one summary model and back
    assert AgentsSummary.model_validate(data["summary"]).to_json() == data["summary"]


def _without_uncounted_reuse(summary: dict, turns: list[TurnSample]) -> None:
    """The reuse figures over turns that said no cached count, left out: a summary stored
    before reused.turn_reused skipped those turns, where this sm121 counts them at 0
    (tests/unit/bench/test_agents_reused.py); the file keeps the figures it was written with."""
    if not any(t.cached_tokens is not None for t in turns):
        return
    uncounted = {t.turn for t in turns if t.cached_tokens is None}
    for row in summary.get("by_turn", []):
        if row["turn"] in uncounted:
            row.pop("reuse_mean", None)
            row.pop("reuse_min", None)
    if uncounted - {0}:
        summary.pop("reuse_after_first", None)


def _same(a: object, b: object) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        assert a.keys() == b.keys()
        for key in a:
            _same(a[key], b[key])
    elif isinstance(a, list) and isinstance(b, list):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            _same(x, y)
    elif isinstance(a, float) and isinstance(b, float):
        assert a == pytest.approx(b, rel=1e-12)
    else:
        assert a == b
