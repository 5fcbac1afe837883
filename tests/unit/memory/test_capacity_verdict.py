"""The verdict line: met, or the resource the engine's counters show (fixtures: the issue's
H100 rows and the H200 tune's probes)."""

from __future__ import annotations

from dataclasses import replace

from sm121.memory.capacity import predict
from sm121.memory.capacity_types import Knobs, Pool, Resource, SessionShape
from sm121.memory.verdict import (
    MissCause,
    RunEvidence,
    expected_reuse,
    judge,
    turn_expected_reuse,
)

SHAPE = SessionShape(workload="coding-agent-with-batch", turns=5, last_context_tokens=19_684,
                     growth_per_turn_tokens=884, turn_new_tokens=625, reply_tokens=96,
                     think_time_s=1.25, long_job_tokens=98_242)
PRED = predict(Pool(392_032, 16, "given"), SHAPE, Knobs(41, 4096, 1024))


def test_met_below_the_cliff_with_a_transient_eviction_noted():
    # H100, 16 agents: 100%, 0 preemptions, reuse mean 96%, min 49%
    v = judge(RunEvidence(16, 1.0, preemptions=0, reuse_mean=0.96, reuse_min=0.494), PRED)
    assert v.met and v.resource is None and v.line.startswith("met at 16")
    assert v.agrees(16)


def test_past_the_cliff_kv_is_named_with_its_evidence():
    # H100, 24 agents: 25%, 14 preemptions, reuse mean 64%
    v = judge(RunEvidence(24, 0.25, preemptions=14, reuse_mean=0.64, kv_usage_peak=0.99), PRED)
    assert v.resource is Resource.KV and v.agrees(24)
    assert v.line.startswith("missed: KV (evictions: reuse fell to 64% (expected 95%), "
                             "14 preemptions, KV usage peak 0.99)")
    assert "predicted at most 19 (KV binds)" in v.line


def test_preemptions_alone_name_kv():
    v = judge(RunEvidence(20, 0.875, preemptions=3, reuse_mean=0.93), PRED)
    assert v.resource is Resource.KV and "3 preemptions" in v.line


def test_reprefilled_tokens_name_kv_when_reuse_is_not_measured():
    v = judge(RunEvidence(20, 0.5, reprefill_per_turn=9_000, turn_new_tokens=625), PRED)
    assert v.resource is Resource.KV and "9,000 tokens re-prefilled a turn" in v.line


def test_misses_inside_the_long_prefill_name_admission():
    # H200 reference arm at 4 agents: no threshold, the turns wait for the 98K prefill
    v = judge(RunEvidence(4, 0.75, preemptions=0, reuse_mean=0.97, misses=4,
                          misses_during_long=4), PRED)
    assert v.resource is Resource.ADMISSION
    assert v.line.startswith("missed: admission during the long prefill (4 of 4 misses")


def test_waiting_at_max_num_seqs_names_sequences():
    v = judge(RunEvidence(8, 0.906, preemptions=0, reuse_mean=0.97, misses=3,
                          misses_during_long=0, waiting_peak=3, running_peak=6,
                          max_num_seqs=6), PRED)
    assert v.resource is Resource.SEQUENCES and "3 waiting while max-num-seqs 6 ran" in v.line


def test_no_other_cause_is_the_step_budget():
    # H200 agent-admission at 28: 91.1%, no evictions, misses outside the long prefill
    v = judge(RunEvidence(28, 0.911, preemptions=0, reuse_mean=0.97, misses=10,
                          misses_during_long=1), PRED)
    assert v.resource is Resource.STEP_BUDGET and v.line.startswith("missed: step budget")


def test_without_counters_the_cause_is_not_known():
    v = judge(RunEvidence(8, 0.5))
    assert v.resource is None and "cause not known" in v.line and v.predicted is None


def test_expected_reuse_of_an_append_only_session():
    # 15K-token first turn, 625 new tokens a turn: about 96% reused after the first turn
    share = expected_reuse(15_264, 884, 625, 5, 16)
    assert share is not None and 0.95 < share < 0.98


def test_a_small_overflow_shows_as_turns_that_lost_part_of_their_prefix():
    # CPU testbed, one agent past the pool: mean reuse 94.8% of an expected 98%, min 60%
    v = judge(RunEvidence(11, 0.879, preemptions=0, reuse_mean=0.948, reuse_min=0.601,
                          expected_reuse=0.98), PRED)
    assert v.resource is Resource.KV and "a turn's reuse fell to 60%" in v.line
    below = judge(RunEvidence(10, 0.90, preemptions=0, reuse_mean=0.98, reuse_min=0.976,
                              expected_reuse=0.98), PRED)
    assert below.resource is Resource.STEP_BUDGET  # a miss without evictions is not KV


def test_a_turns_own_expectation_is_its_previous_prompt_in_whole_blocks():
    # 2,000 tokens, then a 30,000-token tool result: 125 whole blocks of the 2,000 are cached
    assert turn_expected_reuse(32_000, 2_000, 16) == 2_000 / 32_000
    assert turn_expected_reuse(32_010, 2_010, 16) == 2_000 / 32_010  # the partial block not
    # the engine computes at least the last token: a prompt all of whose blocks were cached
    # before (a turn that adds nothing) reuses one block less
    assert turn_expected_reuse(2_000, 2_000, 16) == 1_984 / 2_000
    assert turn_expected_reuse(0, 2_000, 16) is None


def test_a_turn_is_judged_by_its_shortfall_not_by_the_lowest_reuse():
    # a big append reuses 6% where 6% was all it could: no eviction, even under a workload
    # whose mean expectation (here 90%) is far above it
    big = RunEvidence(8, 0.90, preemptions=0, reuse_mean=0.88, reuse_min=0.0625,
                      expected_reuse=0.87, worst_turn_reuse=0.0625, worst_turn_expected=0.0625)
    assert judge(big, PRED).resource is Resource.STEP_BUDGET
    met = judge(replace(big, goodput=1.0), PRED)
    assert met.line.startswith("met at 8: goodput 100%; predicted")  # no evictions noted
    # a turn that lost most of its prefix: its own expectation is said beside it
    lost = RunEvidence(8, 0.90, preemptions=0, reuse_mean=0.85, reuse_min=0.0625,
                       expected_reuse=0.87, worst_turn_reuse=0.30, worst_turn_expected=0.92)
    v = judge(lost, PRED)
    assert v.resource is Resource.KV
    assert "a turn's reuse fell to 30% (expected 92%)" in v.line


def test_the_line_says_each_misses_cause_and_keeps_the_resource():
    # the H100 baseline's 17 agents: one evicted turn, three second turns in the cold start
    causes = {MissCause.EVICTED: 1, MissCause.COLD_START: 3}
    lost = RunEvidence(17, 0.941, preemptions=0, reuse_mean=0.96, expected_reuse=0.97,
                       worst_turn_reuse=0.20, worst_turn_expected=0.97, kv_usage_peak=0.98,
                       misses=4, misses_during_long=1, miss_causes=causes)
    v = judge(lost, PRED)
    assert v.resource is Resource.KV
    assert ("missed at 17: goodput 94%; misses: 1 of 4 on evicted turns, 3 in the cold start "
            "(turns queued behind the sessions' first prompts); predicted") in v.line
    assert judge(replace(lost, miss_causes=None), PRED).resource is Resource.KV  # as before
    # a met run with misses says them, within the SLO
    met = judge(RunEvidence(16, 0.969, preemptions=0, reuse_mean=0.97, misses=2,
                            miss_causes={MissCause.COLD_START: 2}), PRED)
    assert met.line.startswith("met at 16: goodput 97% (2 misses in the cold start (turns "
                               "queued behind the sessions' first prompts), within the SLO)")
    # only the causes present, in their order; the step budget stays the step budget
    queued = judge(RunEvidence(28, 0.911, preemptions=0, reuse_mean=0.97, misses=10,
                               misses_during_long=1, miss_causes={
                                   MissCause.QUEUED: 9, MissCause.LONG_PREFILL: 1}), PRED)
    assert queued.resource is Resource.STEP_BUDGET
    assert ("misses: 1 of 10 inside the long prefill's window, 9 queued in a full engine"
            in queued.line)
