"""The capacity model: agents per resource, the binding one, the margin (docs/capacity.md)."""

from __future__ import annotations

from sm121.memory.capacity import predict
from sm121.memory.capacity_types import Knobs, Pool, Resource, SessionShape, Throughput
from sm121.memory.kv_levers import pool_for_agents

# coding-agent-with-batch at 5 turns as the CLI reads it (sessions end at 19,684 tokens at the
# preset's largest sizes; the 98K background job; turns of about 625 new tokens).
SHAPE = SessionShape(workload="coding-agent-with-batch", turns=5, last_context_tokens=19_684,
                     growth_per_turn_tokens=884, turn_new_tokens=625, reply_tokens=96,
                     think_time_s=1.25, long_job_tokens=98_242)
TUNED = Knobs(max_num_seqs=41, step_budget=4096, long_prefill_threshold=1024)


def test_the_h100_pool_binds_on_kv_at_nineteen():
    c = predict(Pool(392_032, 16, "given"), SHAPE, TUNED, agents=24)
    assert (c.predicted, c.binding) == (19, Resource.KV)
    # the long job's window and the cold start are resources of their own, not known without
    # their rates
    assert c.margin == -5 and c.unknown == (Resource.STEP_BUDGET, Resource.LONG_JOB_WINDOW,
                                            Resource.COLD_START)
    assert c.allowance(Resource.SEQUENCES).agents == 40  # the long job holds one sequence
    # the job's own window evicts past (24,502 - 6,141 blocks) / 1,231 = 14
    assert c.transient_from == 14
    assert "not known without the long job's prefill rate" in \
        c.allowance(Resource.LONG_JOB_WINDOW).how
    assert "holds at most 19 agents" in c.headline() and "KV binds" in c.headline()


def test_twice_the_pool_holds_twice_the_agents():
    c = predict(Pool(782_032, 16, "boot log"), SHAPE, TUNED)
    assert (c.predicted, c.binding) == (39, Resource.KV)


def test_sequences_bind_on_the_shipped_agent_profile():
    c = predict(Pool(392_032, 16, "given"), SHAPE, Knobs(6, 2048, 1024))
    assert (c.predicted, c.binding) == (5, Resource.SEQUENCES)


def test_no_pool_leaves_kv_not_known_and_the_prediction_an_upper_bound():
    c = predict(None, SHAPE, TUNED)
    assert c.allowance(Resource.KV).agents is None and Resource.KV in c.unknown
    assert (c.predicted, c.binding) == (40, Resource.SEQUENCES)
    assert "at most" in c.headline()


def test_no_threshold_with_a_measured_rate_makes_admission_bind_during_the_long_prefill():
    rate = Throughput(15_000, 70, "H200 at 100K depth")
    c = predict(Pool(782_032, 16, "given"), SHAPE, Knobs(41, 8192, None), rate, 2.0)
    assert (c.predicted, c.binding) == (0, Resource.ADMISSION)
    assert "waits about 6.5 s" in c.allowance(Resource.ADMISSION).how


def test_the_step_budget_shrinks_with_the_long_jobs_share_of_each_step():
    rate = Throughput(15_000, 70, "measured")
    small = predict(Pool(782_032, 16, "given"), SHAPE, Knobs(41, 2048, 1024), rate, 2.0)
    large = predict(Pool(782_032, 16, "given"), SHAPE, Knobs(41, 4096, 1024), rate, 2.0)
    s, l_ = small.allowance(Resource.STEP_BUDGET).agents, large.allowance(Resource.STEP_BUDGET).agents
    assert s is not None and l_ is not None and l_ > s
    assert small.binding is Resource.STEP_BUDGET
    assert small.unknown == (Resource.LONG_JOB_WINDOW, Resource.COLD_START)


def test_the_kv_lever_names_the_pool_a_target_needs():
    assert pool_for_agents(24, SHAPE, 16) == 24 * 1_231 * 16
    # fp8 halves a token's bytes: the same memory holds twice the tokens, so twice the agents
    assert predict(Pool(2 * 392_032, 16, "fp8"), SHAPE, TUNED).predicted == 39


def test_when_kv_binds_the_levers_say_what_fp8_would_hold():
    c = predict(Pool(392_032, 16, "given"), SHAPE, TUNED)
    assert any("kv-cache-dtype fp8 (half the bytes a token: about 39 agents" in line
               for line in c.lines())
    on_fp8 = predict(Pool(392_032, 16, "given"), SHAPE, Knobs(41, 4096, 1024, kv_dtype="fp8"))
    assert not any("fp8" in line for line in on_fp8.lines())
