"""SLO terms, goodput and the verdicts built on them: per-turn checks, run-level percentiles,
turns during the background job, the best A/B profile and the largest N of a sweep."""

from __future__ import annotations

import pytest

from sm121.bench.scenarios.agents.choose import verdict
from sm121.bench.scenarios.agents.models import (
    AgentsAbEntry,
    AgentsSweepEntry,
    RunMetrics,
    TurnSample,
    read_run,
)
from sm121.bench.scenarios.agents.slo import evaluate, parse_slo
from sm121.bench.scenarios.agents.summary import headline, overlaps_background, summarize_run
from sm121.bench.scenarios.agents.sweep import largest_meeting
from sm121.errors import Sm121Error


def turn(ttft, decode=50.0, agent=0, index=1, reuse=0.95, submitted=0.0):
    return {"kind": "turn", "agent": agent, "turn": index, "ttft_s": ttft,
            "decode_tok_s": decode, "reuse": reuse, "submitted": submitted,
            "first_token": submitted + ttft, "finished": submitted + ttft + 1,
            "prompt_tokens": 1000, "usage_checked": True, "prompt_exact": True}


def typed(record):
    return TurnSample.model_validate(record)


def test_terms_parse_with_units_and_bad_terms_are_named():
    terms = parse_slo("ttft_p95=2s, decode_p50=20,itl_p99=150ms")
    assert [(t.metric, t.q, t.threshold) for t in terms] == [
        ("ttft", 95, 2.0), ("decode", 50, 20.0), ("itl", 99, 0.15)]
    assert terms[0].lower_is_better and not terms[1].lower_is_better
    assert parse_slo(None)[0].name == "ttft_p95=2s"  # the default
    for bad in ("ttft=2s", "speed_p50=3", "ttft_p0=1s", "ttft_p95=fast"):
        with pytest.raises(Sm121Error, match="SLO"):
            parse_slo(bad)


def test_goodput_counts_turns_meeting_every_term():
    turns = [typed(turn(0.5, 30)), typed(turn(1.5, 10)), typed(turn(3.0, 40)),
             typed(turn(0.2, 25))]
    result = evaluate(parse_slo("ttft_p50=1s,decode_p50=20"), turns)
    # meet both: 0.5/30 and 0.2/25; 1.5 s fails TTFT (and decode), 3.0 s fails TTFT
    assert (result.good_turns, result.goodput) == (2, 0.5)
    ttft, decode = result.terms
    assert ttft.observed == pytest.approx(1.0)  # median of 0.2, 0.5, 1.5, 3.0
    assert ttft.met and decode.met and result.met
    assert (ttft.turns_meeting, decode.turns_meeting) == (2, 3)
    strict = evaluate(parse_slo("ttft_p95=1s"), turns)
    assert not strict.met and strict.goodput == 0.5
    assert evaluate(parse_slo("ttft_p95=1s"), []).goodput is None


def test_a_turn_without_a_value_does_not_meet_the_term():
    assert evaluate(parse_slo("decode_p50=1"), [typed(turn(0.1, None))]).good_turns == 0


def test_turns_waiting_during_the_background_prefill_are_split_out():
    background = {"kind": "background", "submitted": 10.0, "first_token": 20.0,
                  "ttft_s": 10.0, "prompt_tokens": 50000}
    during = turn(8.0, submitted=12.0)  # waited inside the prefill
    before = turn(0.5, submitted=2.0)
    after = turn(0.4, submitted=21.0)
    assert overlaps_background(typed(during), typed(background))
    assert not overlaps_background(typed(before), typed(background))
    assert not overlaps_background(typed(after), typed(background))
    samples = [{"kind": "config", "slo": "ttft_p95=2s", "workload": {"name": "w"}},
               during, before, after, background]
    summary = summarize_run(read_run(samples))
    assert summary.background is not None
    assert summary.background.turns_during == 1
    assert summary.background.ttft_during.p50 == 8.0
    flat = headline(read_run(samples))
    assert flat.ttft_p95_during_background_s == 8.0
    assert flat.background_ttft_s == 10.0
    assert flat.goodput == pytest.approx(2 / 3)
    assert summary.turns == 3  # the background job is not an agent turn


def test_summary_by_turn_and_per_agent():
    samples = [{"kind": "config", "slo": "ttft_p95=2s"},
               turn(2.0, agent=0, index=0, reuse=0.0), turn(3.0, agent=1, index=0, reuse=0.0),
               turn(0.2, 40, agent=0, index=1), turn(0.3, 20, agent=1, index=1, reuse=0.97)]
    summary = summarize_run(read_run(samples))
    first, second = summary.by_turn
    assert (first.n, first.reuse_mean) == (2, 0.0)
    assert second.reuse_mean == pytest.approx(0.96)
    assert summary.reuse_after_first.min == 0.95
    assert [a.agent for a in summary.per_agent] == [0, 1]


def _ab_sample(profile, goodput, ttft_p95):
    return AgentsAbEntry(profile=profile, rep=0, metrics=RunMetrics(
        goodput=goodput, ttft_p95_s=ttft_p95, slo_terms={"ttft_p95=2s": ttft_p95}))


def test_the_verdict_names_the_profile_with_the_best_goodput_and_why():
    samples = [_ab_sample("agent", 0.5, 9.0), _ab_sample("agent", 0.6, 8.0),
               _ab_sample("agent-admission", 0.9, 1.5), _ab_sample("agent-admission", 1.0, 1.1)]
    result = verdict(samples, ["agent", "agent-admission"]).model_dump()
    assert result["best"] == "agent-admission"
    assert result["profiles"]["agent"]["goodput"] == pytest.approx(0.55)
    assert "ttft_p95=2s observed 1.3" in result["why"] and "agent: goodput 55.0%" in result["why"]
    tie = verdict([_ab_sample("a", 1.0, 2.0), _ab_sample("b", 1.0, 1.0)], ["a", "b"]).model_dump()
    assert tie["best"] == "b"  # equal goodput: the lower TTFT p95


def test_the_largest_n_needs_every_smaller_n_to_meet_the_slo():
    def point(n, met):
        return AgentsSweepEntry(agents=n, metrics=RunMetrics(slo_met=met))

    assert largest_meeting([point(1, True), point(2, True), point(4, False)]) == 2
    assert largest_meeting([point(1, True), point(2, False), point(4, True)]) == 1
    assert largest_meeting([point(1, False)]) is None
