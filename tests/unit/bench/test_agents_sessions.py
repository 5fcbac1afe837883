"""`bench agents` and the gateway's session admission: staggered starts, each turn's session
wait (X-Sm121-Session-Wait), and the per-session wait and goodput in the summary, the report
and the terminal lines."""

from __future__ import annotations

import pytest

from sm121.bench.client import StreamRecord
from sm121.bench.scenarios.agents.models import AgentsRun, RunConfig, TurnSample, WorkloadRef
from sm121.bench.scenarios.agents.params import agent_params
from sm121.bench.scenarios.agents.report import console_lines, summary_lines
from sm121.bench.scenarios.agents.run import session_start_delays
from sm121.bench.scenarios.agents.session import turn_record
from sm121.bench.scenarios.agents.summary import summarize_run
from sm121.bench.scenarios.agents.workload import load_workload
from sm121.errors import Sm121Error


def test_stagger_spaces_sessions_by_the_mean_think_time() -> None:
    workload = load_workload("coding-agent")  # think time 0.5-2.0 s: a mean of 1.25 s
    assert session_start_delays("together", 3, workload) == [0.0, 0.0, 0.0]
    assert session_start_delays("stagger", 3, workload) == [0.0, 1.25, 2.5]
    with pytest.raises(Sm121Error):
        session_start_delays("random", 3, workload)
    with pytest.raises(Sm121Error):
        agent_params(4, 6, None, "coding-agent", "ttft_p95=2s", "sometimes")
    assert agent_params(4, 6, None, "coding-agent", "ttft_p95=2s",
                        "stagger").session_start == "stagger"


def test_a_turn_keeps_the_gateways_session_wait() -> None:
    record = StreamRecord(label="t", submitted=10.0, chunk_times=[12.5, 12.6],
                          chunk_tokens=[1, 1], finished=12.7,
                          headers={"X-Sm121-Session-Wait": "2.250000"})
    assert turn_record(record, t0=10.0).session_wait_s == 2.25
    plain = StreamRecord(label="t", submitted=10.0, chunk_times=[10.5], chunk_tokens=[1],
                         finished=10.6)
    assert turn_record(plain, t0=10.0).session_wait_s is None


def _turn(agent: int, turn: int, submitted: float, ttft: float, wait: float | None
          ) -> TurnSample:
    fields = {"agent": agent, "turn": turn, "submitted": submitted, "ttft_s": ttft,
              "first_token": submitted + ttft, "finished": submitted + ttft + 1}
    if wait is not None:
        fields["session_wait_s"] = wait
    return TurnSample.model_validate(fields)


def _run(waits: bool) -> AgentsRun:
    """Agent 0 admitted at once and fast; agent 1 waited 20 s, then was fast too."""
    turns = [_turn(0, 0, 0.0, 0.5, 0.0 if waits else None),
             _turn(0, 1, 2.0, 0.3, 0.0 if waits else None),
             _turn(0, 2, 4.0, 0.4, 0.0 if waits else None),
             _turn(1, 0, 0.0, 21.0, 20.0 if waits else None),
             _turn(1, 1, 23.0, 0.2, 0.0 if waits else None),
             _turn(1, 2, 25.0, 3.0, 0.0 if waits else None)]
    config = RunConfig(workload=WorkloadRef(name="w", slo_from_turn=1), agents=2,
                       slo="ttft_p95=1s")
    return AgentsRun(config=config, turns=turns, bars=turns)


def test_per_session_wait_and_goodput_through_session_admission() -> None:
    summary = summarize_run(_run(waits=True))
    assert summary.per_session is not None
    first, late = summary.per_session
    assert (first.session_wait_s, first.good_turns, first.judged) == (0.0, 2, 2)
    assert (late.session_wait_s, late.first_ttft_s, late.good_turns) == (20.0, 21.0, 1)
    assert late.goodput == 0.5
    lines = console_lines(summary)
    assert lines[-1].startswith("session admission: 1 of 2 sessions waited (longest 20.0 s)")
    assert "admitted at once 2/2, waited 1/2" in lines[-1]
    markdown = "\n".join(summary_lines(summary))
    assert "Per session" in markdown and "| 1 | 0 s | 21.0 s | 20.0 s | 1 / 2 | 50.0% |" \
        in markdown


def test_without_session_admission_the_summary_is_as_before() -> None:
    summary = summarize_run(_run(waits=False))
    assert "per_session" not in summary.model_dump(exclude_unset=True)
    assert not any(line.startswith("session admission") for line in console_lines(summary))
