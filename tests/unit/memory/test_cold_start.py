"""What the cold start costs the SLO (memory/cold_start.py), on plain numbers, and as the
capacity model's resource."""

from __future__ import annotations

from dataclasses import replace

import pytest

from sm121.memory.capacity import predict
from sm121.memory.capacity_types import Knobs, Pool, Resource, SessionShape
from sm121.memory.cold_start import (
    ColdStartInputs,
    FreshRate,
    binds_from,
    cost,
    describe,
    sum_below,
)

# Round numbers: first prompts of 10,000 fresh tokens at 20,000 tok/s, two at a time (a
# threshold of 1,000 in a 2,000-token step): a group every 1 s, a step 0.1 s. A fixed 20-token
# reply (2 s) and 1 s of think: a session sends its second turn 3 s after its first prompt's
# first token. SLO 1 s, 4 judged turns a session.
ROUND = ColdStartInputs(first_prompt_tokens=10_000, shared_tokens=0, step_budget=2000,
                        threshold=1000, reply_tokens=(20, 20), think_time_s=(1.0, 1.0),
                        slo_ttft_s=1.0, judged_turns=4, second_turn_judged=True,
                        rate=FreshRate(20_000, "given"))


def test_the_arithmetic_of_the_groups_the_release_and_a_step():
    assert ROUND.slots == 2 and ROUND.group_s == pytest.approx(1.0)
    assert ROUND.step_s == pytest.approx(0.1)
    assert [ROUND.completes(k) for k in (1, 2, 3, 9, 10)] == [1, 1, 2, 5, 5]
    # 10 agents: the 10th first prompt starts when the 8th completes (4 s); a place frees when
    # the 9th does (5 s): the release
    assert ROUND.duration(10) == 5 and ROUND.release(10) == 5
    assert ROUND.release(2) == 0  # every first prompt starts at once: no second turn waits


def test_a_threshold_at_or_over_the_budget_prefills_one_at_a_time():
    whole = replace(ROUND, threshold=None)
    assert whole.slots == 1 and whole.group_s == pytest.approx(0.5)
    assert replace(ROUND, threshold=2000).slots == 1


def test_second_turns_sent_before_the_release_less_the_slo_miss():
    # 10 agents: a second turn sent before 5 + 0.1 - 1 = 4.1 s waits past 1 s; the first
    # group's sessions send at 1 + 3 = 4 s (2 misses), the second's at 5 s
    c = cost(ROUND, 10)
    assert c.misses == 2 and c.judged == 40 and c.met  # 2 of 40 allowed (95%)
    assert cost(ROUND, 9).misses == 0  # released at 4 s: every second turn comes after 3.1
    # 12 agents: released at 6 s; the first two groups (4 sessions) miss, 4 of 48 (2.4 allowed)
    c12 = cost(ROUND, 12)
    assert c12.misses == 4 and not c12.met and c12.goodput == pytest.approx(44 / 48)
    assert binds_from(ROUND) == 12


def test_replies_and_think_times_spread_over_their_ranges():
    # A uniform on [0, 2] plus B uniform on [0, 1]
    assert sum_below(0.5, (0, 2), (0, 1)) == pytest.approx(0.0625)
    assert sum_below(1.0, (0, 2), (0, 1)) == pytest.approx(0.25)
    assert sum_below(2.0, (0, 2), (0, 1)) == pytest.approx(0.75)
    assert sum_below(3.0, (0, 2), (0, 1)) == 1 and sum_below(0, (0, 2), (0, 1)) == 0
    assert sum_below(1.5, (1, 1), (0, 1)) == pytest.approx(0.5)  # one of them a point
    assert sum_below(2.5, (1, 1), (1, 1)) == 1 and sum_below(1.5, (1, 1), (1, 1)) == 0
    # replies of 1-3 s: the first group's sessions miss where reply + 1 s think < 3.1 s
    # (P = 1.1 / 2), the second's where it is under 2.1 s (P = 0.1 / 2)
    spread = replace(ROUND, reply_tokens=(10, 30))
    assert cost(spread, 10).misses == pytest.approx(2 * 0.55 + 2 * 0.05)


# coding-agent-with-batch at 5 turns on the H200's agent-admission profile: its first prompt as
# the engine counted it, the preset's ranges, the H200 knee's fresh 16,384-token prompt
H200 = ColdStartInputs(first_prompt_tokens=17_747, shared_tokens=0, step_budget=2048,
                       threshold=1024, reply_tokens=(32, 160), think_time_s=(0.5, 2.0),
                       slo_ttft_s=2.0, judged_turns=4, second_turn_judged=True,
                       rate=FreshRate(34_602, "measured on the H200's knee"))


def test_more_agents_never_cost_fewer_turns_and_a_faster_rate_or_looser_slo_never_more():
    misses = [cost(H200, n).misses for n in range(1, 61)]
    assert misses == sorted(misses) and misses[-1] > 0
    for n in (16, 28, 40):
        by_rate = [cost(replace(H200, rate=FreshRate(r, "")), n).misses
                   for r in (20_000, 30_000, 40_000, 60_000)]
        assert by_rate == sorted(by_rate, reverse=True)
        by_slo = [cost(replace(H200, slo_ttft_s=s), n).misses for s in (0.5, 1, 2, 4)]
        assert by_slo == sorted(by_slo, reverse=True)


@pytest.mark.parametrize("inputs", [
    H200, replace(H200, step_budget=4096), replace(H200, step_budget=8192),
    replace(H200, threshold=None), replace(H200, threshold=512), ROUND,
    replace(ROUND, reply_tokens=(5, 40), think_time_s=(0.2, 3.0)),
])
def test_binds_from_is_the_fewest_agents_the_cold_start_alone_leaves_under_the_target(inputs):
    first = binds_from(inputs)
    assert first is not None
    assert not cost(inputs, first).met
    assert all(cost(inputs, n).met for n in range(1, first))


def test_a_cold_start_the_slo_does_not_judge_or_cannot_cost_the_target_never_binds():
    assert binds_from(replace(H200, second_turn_judged=False)) is None
    assert cost(replace(H200, second_turn_judged=False), 60).misses == 0
    # 20 judged turns a session: even every second turn missing leaves 95%
    assert binds_from(replace(H200, judged_turns=20)) is None


def test_the_description_gives_the_arithmetic():
    text = describe(H200, 28)
    assert "2 at a time (threshold 1,024 of a 2,048-token step) at 34,602 tok/s" in text
    assert "none shared" in text and "(59 ms a step)" in text
    assert "at 28: the last first prompt done at 14.4 s, second turns admitted from 14.4 s" in text


# the same as the capacity model's session and the H200 agent-admission arm's pool
COUNTED = SessionShape(workload="coding-agent-with-batch", turns=5, last_context_tokens=20_343,
                       growth_per_turn_tokens=625, turn_new_tokens=625, reply_tokens=96,
                       think_time_s=1.25, long_job_tokens=98_224, first_prompt_tokens=17_747,
                       prefix_source="as counted", reply_range=(32, 160), think_range=(0.5, 2.0))
ADMISSION = Knobs(max_num_seqs=41, step_budget=2048, long_prefill_threshold=1024)
POOL = Pool(781_040, 16, "given")
RATE = FreshRate(34_602, "measured on the H200's knee")


def test_the_prediction_names_the_cold_start_when_its_rate_is_given():
    # measured on the H200: 16 met, 28 missed with 10 of its 10 misses in the cold start
    c = predict(POOL, COUNTED, ADMISSION, slo_ttft_s=2.0, agents=28, fresh_rate=RATE)
    assert (c.predicted, c.binding) == (23, Resource.COLD_START)
    assert c.allowance(Resource.KV).agents == 38  # the KV line stays
    cold = c.allowance(Resource.COLD_START)
    assert cold.how.startswith("misses the goodput target from 24; at 28: about 9.7 of 112")
    assert c.cold_start is not None and not c.cold_start.met
    assert any(line.startswith("the cold start: every session's first prompt (17,747 tokens")
               for line in c.lines())
    assert Resource.COLD_START not in c.unknown and "the cold start binds" in c.headline()


def test_without_a_rate_a_count_or_a_step_budget_the_cold_start_is_not_known():
    c = predict(POOL, COUNTED, ADMISSION, slo_ttft_s=2.0)
    assert Resource.COLD_START in c.unknown and c.cold_start is None
    assert "(--cold-prefill-tok-s)" in c.allowance(Resource.COLD_START).how
    uncounted = predict(POOL, replace(COUNTED, first_prompt_tokens=None), ADMISSION,
                        slo_ttft_s=2.0, fresh_rate=RATE)
    assert "a first prompt an engine counted (--engine-url)" in \
        uncounted.allowance(Resource.COLD_START).how
    default = predict(POOL, COUNTED, Knobs(41, None, None), slo_ttft_s=2.0, fresh_rate=RATE)
    assert Resource.COLD_START in default.unknown


def test_a_workload_judged_from_its_third_turn_has_no_cold_start_limit():
    # the CPU testbed's capacity workloads: the first two turns wait behind the cold prefills
    c = predict(POOL, replace(COUNTED, slo_from_turn=2), ADMISSION, slo_ttft_s=2.0)
    cold = c.allowance(Resource.COLD_START)
    assert cold.agents is None and not cold.limits and Resource.COLD_START not in c.unknown
