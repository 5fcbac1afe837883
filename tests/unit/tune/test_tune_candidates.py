"""Candidates from the knee, the budget's plan, and the pick order (sm121/bench/tune)."""

from sm121.bench.tune.budget import Estimates, candidate_cost, plan
from sm121.bench.tune.candidates import Candidate, derive
from sm121.bench.tune.knobs import effective_step
from sm121.bench.tune.pick import binding, rank
from sm121.engines.registry import adapter_for
from sm121.recipes.schema import EngineKind

KNOBS = adapter_for(EngineKind.VLLM).scheduler
BASE = {"max-num-batched-tokens": 2048, "max-num-seqs": 6}
BASELINES = {"agent": BASE, "agent-admission": {**BASE, "long-prefill-token-threshold": 1024}}


def _by_name(found):
    return {c.name: c for c in found}


def test_candidates_start_with_the_recipe_profiles_then_derive_around_the_knee():
    found = derive(1024, 32, "agent", BASE, BASELINES, agents=8,
                   flags=frozenset({"long-prefill-token-threshold-adaptive"}), knobs=KNOBS)
    names = [c.name for c in found]
    assert names[:2] == ["agent", "agent-admission"] and found[0].args == {}
    c = _by_name(found)
    assert c["t-lpt-1024"].args == {"max-num-batched-tokens": 2048, "max-num-seqs": 9,
                                    "long-prefill-token-threshold": 1024}
    assert c["t-lpt-1024-seqs-32"].args["max-num-seqs"] == 32
    assert c["t-lpt-512"].args["long-prefill-token-threshold"] == 512
    assert c["t-lpt-1024-adaptive"].args["long-prefill-token-threshold-adaptive"] is True
    assert c["t-chunk-4096-lpt-1024"].args["max-num-batched-tokens"] == 4096
    assert "t-lpt-1024-partial-2" not in c  # this version has no partial prefills
    assert names.index("t-lpt-1024") < names.index("t-lpt-512")


def test_a_knee_at_or_above_the_chunk_gets_twice_the_knee_as_step_budget():
    found = _by_name(derive(4096, None, "agent", BASE, {}, agents=2,
                            flags=frozenset({"max-num-partial-prefills",
                                             "max-long-partial-prefills"}), knobs=KNOBS))
    assert found["t-lpt-4096"].args["max-num-batched-tokens"] == 8192
    assert found["t-lpt-4096-partial-2"].args["max-num-partial-prefills"] == 2
    assert effective_step(found["t-lpt-4096"].args, KNOBS) == 4096
    assert derive(None, None, "agent", BASE, {"agent": BASE}, 4, frozenset(), KNOBS)[0].name == "agent"
    assert Candidate.from_json(found["t-lpt-2048"].to_json()) == found["t-lpt-2048"]


def test_budget_keeps_reps_before_candidates():
    est = Estimates(boot_s=50, rep_s=55, rest_s=5)
    assert candidate_cost(est, 3, 0) == 50 + 165 + 10 + 15
    roomy = plan(1500, est, available=6)
    assert roomy.reps == 3 and roomy.fits and roomy.candidates * candidate_cost(
        est, 3, roomy.sweep_points) <= 1500
    tight = plan(500, est, available=6)  # two candidates fit only with fewer sweep points
    assert tight.candidates == 2 and tight.reps == 3 and tight.sweep_points == 0
    hopeless = plan(10, est, available=6)
    assert not hopeless.fits and hopeless.candidates == 2 and hopeless.reps == 1


def _row(name, goodput, cost, kv=100):
    return {"name": name, "goodput": goodput, "prefill_cost": cost, "kv_tokens": kv}


def test_pick_by_goodput_then_prefill_cost_then_kv_capacity():
    table = [_row("a", 0.9, 0.0), _row("b", 1.0, 0.10), _row("c", 1.0, 0.02, 50),
             _row("d", 1.0, 0.02, 80), _row("e", None, None)]
    assert [r["name"] for r in rank(table)] == ["d", "c", "b", "a", "e"]
    assert binding(table)["met"] and binding(table)["candidates"] == ["c", "d"]


def test_when_no_candidate_meets_both_the_binding_bound_is_named_with_its_margin():
    table = [_row("cheap", 0.80, 0.01), _row("good", 0.98, 0.12)]
    result = binding(table, {"512": 0.7, "2048": 0.97})
    assert not result["met"]
    assert "the cost bound binds" in result["text"] and "7.0% over 5%" in result["text"]
    assert "the goodput bound binds" in result["text"] and "15.0% short" in result["text"]
    assert "512 tokens at 70%" in result["text"]
