"""What lets tune resume: its state file across invocations, and the target N's verdict
from the repetitions already measured (sm121/bench/tune)."""

import pytest

from sm121.bench.scenarios.agents.models import AgentsAbEntry, RunMetrics
from sm121.bench.tune.result import CandidateRecord, Probe, RequestRecord
from sm121.bench.tune.state import TuneState
from sm121.bench.tune.sweep import met_at_target
from sm121.errors import Sm121Error

REQUEST = {"recipe": "tiny-cpu", "workload": "coding-agent-with-batch", "slo": "ttft_p95=2s",
           "agents": 4, "turns": 3, "budget_s": 600}


def test_state_resumes_with_the_same_question_and_accumulates_time(tmp_path):
    first = TuneState(tmp_path, RequestRecord.model_validate(REQUEST))
    first.record.candidates = [CandidateRecord(name="agent", base="agent")]
    first.save()
    first.add_sweep_point("agent", Probe(agents=6, slo_met=True))
    spent = first.record.elapsed_s
    again = TuneState(tmp_path, RequestRecord.model_validate({**REQUEST, "budget_s": 900}))  # a new budget is allowed
    assert again.record.resumed == 1
    assert again.record.candidates == [CandidateRecord(name="agent", base="agent")]
    assert again.sweep("agent") == [Probe(agents=6, slo_met=True)]
    assert again.elapsed_s >= spent and again.record.request.budget_s == 900
    with pytest.raises(Sm121Error, match="not of"):
        TuneState(tmp_path, RequestRecord.model_validate({**REQUEST, "agents": 8}))
    fresh = TuneState(tmp_path, RequestRecord.model_validate({**REQUEST, "agents": 8}),
                       fresh=True)
    assert fresh.record.candidates is None


def test_the_target_is_met_by_a_majority_of_the_repetitions():
    samples = [AgentsAbEntry(profile="a", rep=rep, metrics=RunMetrics(slo_met=met))
               for rep, met in enumerate((True, True, False))]
    samples.append(AgentsAbEntry(profile="a", rep=3, error="boom", metrics=RunMetrics()))
    assert met_at_target(samples, "a") is True
    assert met_at_target(samples[1:3], "a") is False  # a tie is not a majority
    assert met_at_target(samples, "b") is None
