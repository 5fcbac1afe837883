"""An arm whose capacity bisection a device call's end cut is booted again for the rest of
it on resume. Fixture: the state and A/B files of the H200 sitting of 2026-12-05
(docs/results/gpu-h200/tune-capacity), after the call that ended while seqs-82 probed N=40:
seqs-82 and lpt-2048 have their run at the target N and no capacity. The next call resumed
past seqs-82 and never measured its capacity. And, on the whole sitting: a reference arm
measured before tune measured exclusive prefills boots once more for its own."""

from __future__ import annotations

import tarfile
from pathlib import Path
from typing import Any

from sm121.bench.ab import AbRequest, open_results
from sm121.bench.tune import after_runs, arm_boots
from sm121.bench.tune.candidates import Candidate
from sm121.bench.tune.knee_step import KneeFacts
from sm121.bench.tune.request import TuneRequest, agent_params
from sm121.bench.tune.result import ExclusivePrefill, Probe
from sm121.bench.tune.state import TuneState

FIXTURE = Path(__file__).parents[2] / "fixtures" / "tune" / "h200-cut-bisection.tar.gz"
SITTING = (Path(__file__).parents[3] / "docs" / "results" / "gpu-h200" / "tune-capacity"
           / "tune-results.tar.gz")  # the whole sitting, every arm measured


def _sitting(tmp_path: Path) -> tuple[TuneRequest, TuneState]:
    with tarfile.open(FIXTURE) as tar:
        tar.extractall(tmp_path, filter="data")
    out = tmp_path / "tune"
    request = TuneRequest("gpu-llama", "coding-agent-with-batch", "ttft_p95=2s", 16, out, 8000,
                          budget_s=3000, turns=5, baselines=["agent-admission"], reps=1,
                          max_agents=40, sweep_points=2)
    return request, TuneState(out, request.to_record())


def test_a_cut_bisection_boots_its_arm_again_for_the_probes_left(tmp_path, monkeypatch):
    request, state = _sitting(tmp_path)
    assert "seqs-82" not in state.record.capacity
    boots: list[tuple[str, list[int]]] = []
    probed: list[int] = []

    def boot_and_measure(ab_request, results, index, name, reps, say, after=None):
        boots.append((name, reps))
        if after is not None:
            after(object())

    def run_point(boot: Any, params: Any, n: int, out: Path, say: Any) -> Probe:
        probed.append(n)
        return Probe(agents=n, slo_met=n <= 28)

    def measure_exclusive(boot: Any, params: Any, say: Any) -> ExclusivePrefill:
        probed.append(0)  # 0: the exclusive long prefill, in order with the probes
        return ExclusivePrefill(run_id="boot", prompt_tokens=98242, ttft_s=7.0)

    monkeypatch.setattr(arm_boots, "boot_and_measure", boot_and_measure)
    monkeypatch.setattr(after_runs, "run_point", run_point)
    monkeypatch.setattr(after_runs, "measure_exclusive", measure_exclusive)
    arms = [Candidate.from_json(c) for c in state.record.candidates or []]
    ab_request = AbRequest(request.recipe, [c.name for c in arms], "agents", 1,
                           agent_params(request).model_dump(), request.out / "ab-agents.json",
                           request.port, resume=True,
                           variants={c.name: (c.base, dict(c.args)) for c in arms})
    results = open_results(ab_request)
    knee = KneeFacts(None, "vllm 0.21.0")
    lines: list[str] = []
    for index in range(5):  # the five arms that were measured
        assert arm_boots.measure_arm(request, ab_request, state, results, knee, index, arms,
                                     lines.append)
    # Only the two cut arms boot, with no run at the target N, each for the probes it has
    # left: seqs-82 two (its N=40 was cut), lpt-2048 one (its N=8 was measured, N=4 cut);
    # each boot's exclusive long prefill first, while the engine is idle. seqs-82's pool
    # (780,704 tokens) predicts 39 agents (KV): 35 first, about 0.9x of it, then bisection
    # where the measurement disagrees (35 missed); lpt-2048's first probes lie past its miss.
    assert boots == [("seqs-82", []), ("lpt-2048", [])]
    assert probed == [0, 35, 25, 0, 4]
    assert [e.ttft_s for e in state.exclusive("seqs-82")] == [7.0]
    assert [e.ttft_s for e in state.exclusive("lpt-2048")] == [7.0]
    assert state.record.capacity["seqs-82"].text == "25 <= N* < 35"
    assert set(state.record.capacity) == {"agent-admission", "reference", "seqs-82",
                                           "lpt-512", "lpt-2048"}
    assert any("seqs-82: its bisection was cut" in line for line in lines)


def test_a_cut_bisection_without_budget_records_what_was_tested(tmp_path, monkeypatch):
    request, state = _sitting(tmp_path)
    state.record.elapsed_s = request.budget_s - 10  # no boot fits
    monkeypatch.setattr(arm_boots, "boot_and_measure",
                        lambda *a, **k: (_ for _ in ()).throw(AssertionError("booted")))
    arms = [Candidate.from_json(c) for c in state.record.candidates or []]
    ab_request = AbRequest(request.recipe, [c.name for c in arms], "agents", 1,
                           agent_params(request).model_dump(), request.out / "ab-agents.json",
                           request.port, resume=True,
                           variants={c.name: (c.base, dict(c.args)) for c in arms})
    results = open_results(ab_request)
    index = [c.name for c in arms].index("seqs-82")
    assert not arm_boots.measure_arm(request, ab_request, state, results, KneeFacts(None, ""),
                                     index, arms, print)
    assert state.record.capacity["seqs-82"].text.startswith("N* >= 16")


def test_a_reference_arm_without_an_exclusive_prefill_is_booted_once_for_it(tmp_path,
                                                                            monkeypatch):
    """The committed sitting predates the exclusive prefill: resumed with budget, its
    reference arm boots once more for that alone (no run), so the arms' exclusive cost can
    be priced; once it has one, it does not boot again."""
    with tarfile.open(SITTING) as tar:
        tar.extractall(tmp_path, filter="data")
    out = tmp_path / "tune"
    request = TuneRequest("gpu-llama", "coding-agent-with-batch", "ttft_p95=2s", 16, out, 8000,
                          budget_s=3000, turns=5, baselines=["agent-admission"], reps=1,
                          max_agents=40, sweep_points=2)
    state = TuneState(out, request.to_record())
    state.record.elapsed_s = 0.0
    boots: list[tuple[str, list[int]]] = []

    def boot_and_measure(ab_request, results, index, name, reps, say, after=None):
        boots.append((name, reps))
        after(object())

    monkeypatch.setattr(arm_boots, "boot_and_measure", boot_and_measure)
    monkeypatch.setattr(after_runs, "measure_exclusive", lambda boot, params, say:
                        ExclusivePrefill(run_id="again", prompt_tokens=98242, ttft_s=6.9))
    arms = [Candidate.from_json(c) for c in state.record.candidates or []]
    ab_request = AbRequest(request.recipe, [c.name for c in arms], "agents", 1,
                           agent_params(request).model_dump(), out / "ab-agents.json",
                           request.port, resume=True,
                           variants={c.name: (c.base, dict(c.args)) for c in arms})
    results = open_results(ab_request)
    knee = KneeFacts(None, "vllm 0.21.0")
    for _ in range(2):
        arm_boots.reference_alone(request, ab_request, state, results, knee, arms, print)
    assert boots == [("reference", [])]
    assert [e.ttft_s for e in state.exclusive("reference")] == [6.9]
    state.record.elapsed_s = request.budget_s - 10  # no budget: says so, boots nothing
    state.forget("exclusive")
    said: list[str] = []
    arm_boots.reference_alone(request, ab_request, state, results, knee, arms, said.append)
    assert boots == [("reference", [])] and "no exclusive long prefill" in said[0]
