"""The budget's plan and the targets' binding bound (sm121/bench/tune)."""

from sm121.bench.tune.budget import Estimates, candidate_cost, plan
from sm121.bench.tune.pick import binding
from sm121.bench.tune.result import ArmRow


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
    return ArmRow(name=name, goodput=goodput, prefill_cost=cost, kv_tokens=kv)


def test_when_no_candidate_meets_both_the_binding_bound_is_named_with_its_margin():
    table = [_row("cheap", 0.80, 0.01), _row("good", 0.98, 0.12)]
    result = binding(table)
    assert not result.met
    assert "the cost bound binds" in result.text and "7.0% over 5%" in result.text
    assert "the goodput bound binds" in result.text and "15.0% short" in result.text


def test_an_arm_with_an_unpriced_prefill_or_no_goodput_is_named_not_formatted():
    # on a loaded box an arm can meet goodput while its long prefill went unpriced (the job
    # missed the agents' window): the text says so instead of raising on None
    table = [_row("good", 0.98, None), _row("cheap", None, 0.01)]
    text = binding(table).text
    assert "(good) its long prefill was not priced" in text
    assert "(cheap) reaches not measured" in text
