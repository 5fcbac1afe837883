"""What a one-shot long job's window costs the SLO (memory/long_job_window.py), on plain
numbers, and as the capacity model's resource."""

from __future__ import annotations

from dataclasses import replace

import pytest

from sm121.memory.capacity import predict
from sm121.memory.capacity_types import Knobs, Pool, Resource, SessionShape
from sm121.memory.long_job_window import JobRate, WindowInputs, binds_from, cost, evicts_past

# Round numbers: a 0.1 s step (1,024 tokens at 10,240 tok/s), a 90-token reply and 1 s of
# think time (10 steps): an agent returns every 100 steps; a turn evicted by more than
# 2 s x 10,240 / 2 = 10,240 tokens misses 2 s; 4 judged turns a session.
ROUND = WindowInputs(pool_tokens=400_000, job_tokens=100_000, context_tokens=20_000,
                     threshold=1024, reply_tokens=90, think_time_s=1.0, judged_turns=4,
                     slo_ttft_s=2.0, rate=JobRate(10_240, "given"))


def test_the_arithmetic_of_a_step_a_cycle_and_the_reprefill_the_slo_allows():
    assert ROUND.step_s == pytest.approx(0.1)
    assert ROUND.cycle_steps == pytest.approx(100)
    assert ROUND.reprefill_within_slo == pytest.approx(10_240)
    assert evicts_past(ROUND) == 15  # (400,000 - 100,000) / 20,000


def test_no_deficit_costs_nothing():
    c = cost(ROUND, 15)
    assert c.deficit_tokens == 0 and c.misses == 0 and c.met and c.judged == 60


def test_a_deficit_under_what_the_slo_allows_evicts_without_a_miss():
    # the H100's 16 agents: evictions during the job (a turn's reuse fell to 49%), goodput 100%
    c = cost(replace(ROUND, context_tokens=19_000), 16)  # deficit 4,000
    assert 0 < c.deficit_tokens < ROUND.reprefill_within_slo and c.misses == 0 and c.met


def test_each_turn_returning_past_the_slo_s_share_of_the_deficit_misses():
    # 16 agents: deficit 20,000; 9,760 past R_slo, growing 1,024 a step: 9.5 steps of a
    # 100-step cycle for 16 agents: 1.5 misses of 64 judged (3.2 allowed): met
    c16 = cost(ROUND, 16)
    assert c16.misses == pytest.approx(16 * 9_760 / (1024 * 100)) and c16.met
    c17 = cost(ROUND, 17)  # 29,760 past it: 4.9 misses of 68 (3.4 allowed)
    assert c17.misses == pytest.approx(17 * 29_760 / (1024 * 100)) and not c17.met
    assert binds_from(ROUND) == 17


def test_the_misses_stop_growing_once_the_deficit_passes_the_whole_job():
    # past the pool itself the window's steps (job / chunk) bound the turns it costs
    assert cost(ROUND, 40).misses == pytest.approx(40 * 100_000 / (1024 * 100))


def test_sessions_that_re_prefill_within_the_slo_never_make_the_window_bind():
    small = replace(ROUND, context_tokens=9_000)  # a whole re-prefill fits 2 s
    assert cost(small, 60).misses == 0 and binds_from(small) is None


def test_a_window_too_short_to_cost_the_target_never_binds():
    # 5,000 tokens: 5 steps of a 100-step cycle, under 5% of 4 judged turns whatever N
    assert binds_from(replace(ROUND, job_tokens=5_000)) is None


# coding-agent-with-batch at 5 turns, its first prompt as the H100's engine counted it (17,747;
# 625 tokens a turn, a 96-token reply), the tuned profile, the job's rate at its depth from the
# H200's overlap A/B (docs/capacity.md, "The long job's window").
COUNTED = SessionShape(workload="coding-agent-with-batch", turns=5, last_context_tokens=20_343,
                       growth_per_turn_tokens=625, turn_new_tokens=625, reply_tokens=96,
                       think_time_s=1.25, long_job_tokens=98_224, first_prompt_tokens=17_747,
                       prefix_source="counted")
TUNED = Knobs(max_num_seqs=41, step_budget=4096, long_prefill_threshold=1024)
RATE = JobRate(14_707, "assumed from the H200")


def test_the_window_binds_before_kv_on_the_h100_pool():
    # measured there: 16 met, 18, 19 and 20 missed during the job's window
    c = predict(Pool(392_032, 16, "given"), COUNTED, TUNED, slo_ttft_s=2.0, agents=18,
                job_rate=RATE)
    assert (c.predicted, c.binding) == (17, Resource.LONG_JOB_WINDOW)
    assert c.allowance(Resource.KV).agents == 19  # the KV line stays
    window = c.allowance(Resource.LONG_JOB_WINDOW)
    assert window.how.startswith("misses the goodput target from 18: past 15 agents")
    assert c.window is not None and not c.window.met and 4 < c.window.misses < 6
    assert any(line.startswith("the long job's window: a turn evicted by more than 14,707")
               for line in c.lines())
    assert Resource.LONG_JOB_WINDOW not in c.unknown


def test_the_session_at_its_largest_where_no_engine_counted_the_first_prompt():
    longest = replace(COUNTED, last_context_tokens=19_684, growth_per_turn_tokens=884,
                      first_prompt_tokens=None)
    c = predict(Pool(392_032, 16, "given"), longest, TUNED, slo_ttft_s=2.0, job_rate=RATE)
    # 19,684 a session from the job's start: a bound that errs low, as KV's does
    assert c.allowance(Resource.LONG_JOB_WINDOW).agents == 16


def test_no_rate_leaves_the_window_not_known_and_a_whole_step_job_to_admission():
    c = predict(Pool(392_032, 16, "given"), COUNTED, TUNED, slo_ttft_s=2.0)
    assert Resource.LONG_JOB_WINDOW in c.unknown and c.window is None
    whole = predict(Pool(392_032, 16, "given"), COUNTED, Knobs(41, 8192, None), slo_ttft_s=2.0,
                    job_rate=RATE)
    assert all(a.resource is not Resource.LONG_JOB_WINDOW for a in whole.allowances)
    assert any("whether the SLO absorbs it" in line for line in whole.lines())


def test_a_window_that_cannot_cost_the_target_sets_no_limit_and_no_upper_bound():
    short = replace(COUNTED, last_context_tokens=9_000, first_prompt_tokens=6_404)
    c = predict(Pool(392_032, 16, "given"), short, TUNED, slo_ttft_s=2.0, job_rate=RATE)
    window = c.allowance(Resource.LONG_JOB_WINDOW)
    assert window.agents is None and not window.limits
    assert Resource.LONG_JOB_WINDOW not in c.unknown
    assert any(line.startswith("the long job's window: no limit of its own") for line in c.lines())
