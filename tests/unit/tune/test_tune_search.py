"""tune's search (sm121/bench/tune): step 1's arms change one knob each against the baseline
and all hold the largest N + 1; the capacity bisection's bracket on synthetic outcomes; the
plan made again from measured times; the prefill price (in situ and alone) and the ranking by
capacity; when a claim "A beats B" may be made."""

from dataclasses import replace

import pytest

from sm121.bench.tune.budget import Estimates, candidate_cost, measured, plan
from sm121.bench.tune.candidates import DEFAULTS, Candidate, arms
from sm121.bench.tune.capacity import bracket, first_probes, next_probe
from sm121.bench.tune.choose import price_prefill, rank
from sm121.bench.tune.claims import claim
from sm121.bench.tune.report_arms import arms_section
from sm121.bench.tune.result import (
    ArmRow,
    Binding,
    CapacityRecord,
    ExclusivePrefill,
    Probe,
    RequestRecord,
    TuneRecord,
    TuneResult,
)
from sm121.engines.registry import adapter_for
from sm121.errors import Sm121Error
from sm121.recipes.schema import EngineKind

KNOBS = adapter_for(EngineKind.VLLM).scheduler
CHUNK, SEQS, LPT = KNOBS.batched_tokens, KNOBS.max_num_seqs, KNOBS.long_prefill_threshold
AGENT = {CHUNK: 2048, SEQS: 6}
ADMISSION = {**AGENT, LPT: 1024}


def _merged(arm, profiles):
    return {**profiles[arm.base], **arm.args}


@pytest.mark.parametrize("baseline", ["agent", "agent-admission"])
def test_step_one_changes_one_knob_per_arm_and_every_arm_holds_the_largest_n(baseline):
    profiles = {"agent": AGENT, "agent-admission": ADMISSION}
    profiles = {baseline: profiles[baseline], **profiles}
    found, dropped = arms(baseline, profiles, largest_n=32, knobs=KNOBS)
    by = {a.name: a for a in found}
    assert found[0].name == baseline and found[0].role == ("baseline",)
    assert found[0].differs == () and _merged(found[0], profiles)[SEQS] == 33  # seqs alone
    step1 = [a for a in found if a.source == "step 1"]
    assert step1 and all(len(a.differs) == 1 for a in step1)
    for a in found:
        if a.name != DEFAULTS:
            assert _merged(a, profiles)[SEQS] >= 33, a.name
    assert by["seqs-66"].differs == (SEQS,)
    assert {a.name for a in step1} >= {"seqs-66", "chunk-4096", "chunk-8192", "lpt-512"}
    assert any("chunk-2048" in d for d in dropped)  # the baseline's own chunk: not twice
    (reference,) = [a for a in found if "reference" in a.role]
    assert _merged(reference, profiles)[CHUNK] == 8192 and _merged(reference, profiles).get(
        LPT) is None
    defaults = by[DEFAULTS]
    assert all(_merged(defaults, profiles)[k] is None for k in (CHUNK, SEQS, LPT))
    assert Candidate.from_json(reference.to_json()) == reference


def test_without_a_threshold_the_reference_is_the_chunk_8192_arm():
    found, _ = arms("agent", {"agent": AGENT}, largest_n=8, knobs=KNOBS)
    names = [a.name for a in found]
    assert names[:2] == ["agent", "chunk-8192"] and found[1].role == ("reference",)
    assert found[1].differs == (CHUNK,) and "lpt-2048" not in names  # 2048 >= the chunk


def test_the_bracket_is_lo_met_below_the_first_miss():
    assert bracket([(8, True), (32, False), (20, True), (26, False)]).text == "20 <= N* < 26"
    top = bracket([(8, True), (32, True)])
    assert top.hi is None and top.lo == 32 and "N* >= 32" in top.text
    none = bracket([(8, False), (4, False)])
    assert none.lo == 0 and none.hi == 4 and "N* < 4" in none.text
    bumpy = bracket([(8, True), (16, False), (24, True)])
    assert (bumpy.lo, bumpy.hi, bumpy.non_monotone) == (8, 16, True)
    assert bracket([]).text == "not measured"


def test_bisection_probes_the_top_then_halves_until_narrow_enough():
    assert next_probe([(8, True)], largest=32) == 32
    assert next_probe([(8, True), (32, False)], largest=32) == 20
    assert next_probe([(8, True), (32, False), (20, True)], largest=32) == 26
    assert next_probe([(8, True), (32, False), (20, True)], largest=32, resolution=12) is None
    assert next_probe([(8, True), (32, True)], largest=32) is None  # met at the top
    assert next_probe([(8, False)], largest=32) == 4
    assert next_probe([(1, False)], largest=4) is None  # N* < 1: nothing below to try
    # synthetic capacity 13: the bisection's bracket holds it
    outcomes = [(8, True)]
    while (n := next_probe(outcomes, largest=32)) is not None:
        outcomes.append((n, n <= 13))
    found = bracket(outcomes)
    assert found.lo == 13 and found.hi == 14 and len(outcomes) <= 7


def test_a_search_tests_either_side_of_the_prediction_first():
    assert first_probes(19) == (17, 21)  # the H100's pool
    assert first_probes(39, most=40) == (35, 40)  # the H200's, capped at the search's most
    assert first_probes(5) == (4, 6)
    assert first_probes(1) == (1, 2)


def test_the_plan_is_made_again_from_measured_times():
    guessed = measured([], [], boot_guess=60, rep_guess=60, rest_s=5)
    assert guessed == Estimates(60, 60, 5)
    real = measured([30, 34, 32], [20, 22, 21], boot_guess=60, rep_guess=60, rest_s=5)
    assert real.boot_s == 32 and real.rep_s == 21 + 10  # the median wall and its setup
    before = plan(840, guessed, available=9, reps=3, sweep_points=2, least=1)
    after = plan(840, real, available=9, reps=3, sweep_points=2, least=1)
    assert after.candidates > before.candidates  # faster runs than guessed: more arms fit


def _row(name, ttft, lo, hi, ci=(0.9, 1.0)):
    return ArmRow(name=name, background_ttft_s=ttft, goodput_ci=ci,
                  capacity=CapacityRecord(lo=lo, hi=hi, text="", tested=[]))


def test_the_prefill_is_priced_against_the_reference_in_situ_and_arms_rank_by_capacity():
    table = [_row("base", 7.28, 8, 12), _row("ref", 7.0, 8, 16), _row("big", 7.7, 16, 24),
             _row("top", 7.1, 16, None)]
    price_prefill(table, "ref")
    cost = {r.name: r.prefill_cost for r in table}
    assert cost["ref"] == 0 and cost["base"] == pytest.approx(0.04)
    assert cost["big"] == pytest.approx(0.10)
    # capacity first: big holds 16 at a 10% cost, ref only 8 within the 5% bound
    assert [r.name for r in rank(table)] == ["top", "big", "ref", "base"]
    # within equal capacity, an arm over the bound goes after one within it
    same = [_row("cheap", 7.2, 16, 24), _row("dear", 7.7, 16, 24, ci=(0.95, 1.0))]
    for r, cost in zip(same, (0.03, 0.10), strict=True):
        r.prefill_cost = cost
    assert [r.name for r in rank(same)] == ["cheap", "dear"]
    price_prefill(table, None)
    assert all(r.prefill_cost is None and r.prefill_reference is None for r in table)


def test_the_exclusive_prefill_is_priced_by_its_median_over_boots_against_the_reference():
    ref, arm, none = _row("ref", 6.79, 0, 4), _row("arm", 7.86, 16, 28), _row("none", 7.0, 8, 16)
    ref.exclusive = [ExclusivePrefill(ttft_s=t) for t in (7.0, 7.4, 7.2)]
    arm.exclusive = [ExclusivePrefill(ttft_s=7.3), ExclusivePrefill(error="no first token")]
    price_prefill([ref, arm, none], "ref")
    assert ref.exclusive_ttft_s == 7.2 and ref.exclusive_cost == 0
    assert arm.exclusive_ttft_s == 7.3 and arm.exclusive_cost == pytest.approx(7.3 / 7.2 - 1)
    assert arm.prefill_cost == pytest.approx(7.86 / 6.79 - 1)  # in situ, beside it
    assert none.exclusive_ttft_s is None and none.exclusive_cost is None
    lines = "\n".join(arms_section(_record([ref, arm, none])))
    assert "| 7.20 (3 boots), 0.0% |" in lines and "| 7.30 (1 boot), 1.4% |" in lines
    assert "| not measured |" in lines
    # The plan counts the exclusive prefill in every boot, from the long prefills measured
    est = measured([30], [20], boot_guess=60, rep_guess=60, rest_s=5, prefills=[7, 9, 8])
    assert est.exclusive_s == 8 + 10 and measured([30], [20], 60, 60, 5).exclusive_s == 0
    assert candidate_cost(est, 1, 0) == candidate_cost(replace(est, exclusive_s=0), 1, 0) + 18


def _record(table):
    request = RequestRecord(recipe="r", workload="w", slo="ttft_p95=2s", agents=16, turns=5,
                            budget_s=60, max_agents=40)
    result = TuneResult(table=table, ranking=[r.name for r in table], chosen="arm",
                        baseline="arm", reference="ref", claims=[],
                        binding=Binding(met=True, candidates=[], text=""), cost_bound=0.05,
                        device="d", engine="e", date="2026-12-05")
    return TuneRecord(request=request, result=result)


def test_a_claim_needs_three_boots_one_knob_and_the_same_direction_at_two_ns():
    a = {8: [0.30, 0.32, 0.31], 16: [0.40, 0.42, 0.41]}
    b = {8: [0.50, 0.52, 0.51], 16: [0.90, 0.95, 0.92]}
    shown = claim("a", "b", a, b, ["max-num-batched-tokens"])
    assert shown.shown and shown.winner == "a" and "a beats b" in shown.text
    one_boot = claim("a", "b", {8: [0.3]}, {8: [0.5]}, ["max-num-batched-tokens"])
    assert not one_boot.shown and "3 each needed" in one_boot.text
    assert "no difference shown" in one_boot.text
    two_knobs = claim("a", "b", a, b, ["max-num-batched-tokens", "max-num-seqs"])
    assert not two_knobs.shown and "2 knobs differ" in two_knobs.text
    one_n = claim("a", "b", {8: a[8]}, {8: b[8]}, ["max-num-seqs"])
    assert not one_n.shown and "2 Ns needed" in one_n.text
    noisy = claim("a", "b", {8: [0.3, 0.9, 0.5], 16: [0.3, 0.9, 0.5]},
                  {8: [0.5, 0.4, 0.6], 16: [0.5, 0.4, 0.6]}, ["max-num-seqs"])
    assert not noisy.shown and "includes 0" in noisy.text


def test_the_budget_left_confirms_the_chosen_arm_against_the_baseline_interleaved():
    from sm121.bench.tune.confirm import finalists, next_boot, second_n

    assert finalists(["lpt-512", "agent", "vllm-defaults"], "agent", {"vllm-defaults"}) == [
        "lpt-512", "agent"]
    assert finalists(["vllm-defaults", "agent", "chunk-4096"], "agent", {"vllm-defaults"}) == [
        "agent", "chunk-4096"]  # the baseline chosen: against the runner-up
    assert finalists(["agent"], "agent", set()) == ["agent"]
    def lo(n):
        return CapacityRecord(lo=n, hi=None, text="", tested=[])

    assert second_n(8, [lo(20), lo(12)]) == 12
    assert second_n(8, [lo(8), lo(8)]) == 4  # no other N held by both: half
    assert second_n(1, [lo(1)]) is None
    order = ["a", "b"]
    seen = []
    boots = {"a": 1, "b": 1}
    while (n := next_boot(boots, order, 3)) is not None:
        seen.append(n)
        boots[n] += 1
    assert seen == ["a", "b", "a", "b"]  # ABAB until 3 boots each


def test_the_written_profile_says_only_what_was_measured_and_names_its_runs(tmp_path):
    from sm121.bench.tune.request import TuneRequest
    from sm121.bench.tune.tuned_profile import tuned_profile

    found, _ = arms("agent", {"agent": AGENT}, largest_n=4, knobs=KNOBS)
    chosen = next(a for a in found if a.name == "chunk-4096")
    request = TuneRequest("tiny-cpu", "coding-agent-with-batch", "ttft_p95=2s", 2, tmp_path,
                          8000, 600, max_agents=4)
    row = ArmRow(name=chosen.name, boots=["run-7"], reps=3, good_turns=30, judged_turns=32,
                 goodput=0.9375, goodput_ci=(0.79, 0.99),
                 capacity=bracket([(2, True), (4, False), (3, True)]).record(),
                 probes=[Probe(agents=4, slo_met=False, results_file="/x/capacity/a.json"),
                         Probe(agents=3, slo_met=True, results_file="/x/capacity/b.json")],
                 prefill_rate=15010.0, prefill_cost=0.014, prefill_reference="chunk-8192")
    result = TuneResult(table=[row], ranking=[chosen.name], chosen=chosen.name,
                        baseline="agent", reference="chunk-8192", claims=[],
                        binding=Binding(met=False, candidates=[], text=""), cost_bound=0.05,
                        device="CPU", engine="vLLM 0.32", date="2026-12-03")
    profile = tuned_profile(request, result, found, tmp_path / "report.md")
    note = profile.comments[CHUNK]
    assert "3 <= N* < 4" in note and "boot run-7" in note and "capacity/a.json" in note
    assert "15,010 tok/s, 1.4% against reference arm chunk-8192" in note
    assert "differs from the baseline in max-num-batched-tokens" in note
    assert "knee" not in " ".join(profile.comments.values()) + " ".join(profile.header)
    assert profile.args[CHUNK] == 4096 and profile.args[SEQS] == 6
    assert "30/32 judged turns" in " ".join(profile.header)


def test_llama_cpp_arms_are_its_own_knobs_and_keep_each_slots_context():
    """llama.cpp's adapter: slots np (the total context c grows with them: every arm's slot
    keeps the profile's window), the step budget b, the micro-batch ub (capped at b), the
    shared pool kvu; no long-prefill threshold, dropped with the adapter's reason."""
    engine = adapter_for(EngineKind.LLAMA_CPP)
    knobs, memory = engine.scheduler, engine.memory
    agent = {"c": 65536, "np": 4, "b": 2048, "ub": 512}
    found, dropped = arms("agent", {"agent": agent}, largest_n=8, knobs=knobs, memory=memory,
                          defaults="llama.cpp-defaults")
    by = {a.name: a for a in found}
    assert [a.name for a in found] == [
        "agent", "chunk-8192", "seqs-18", "chunk-4096", "ubatch-256", "ubatch-1024",
        "ubatch-2048", "shared-pool", "llama.cpp-defaults"]
    assert by["agent"].args == {"np": 9, "c": 9 * 16384} and "c 147456" in by["agent"].why
    for arm in found[1:-1]:
        merged = {**agent, **arm.args}
        assert len(arm.differs) == 1, arm
        assert memory.per_request_context(merged) == (9 * 16384 if arm.name == "shared-pool"
                                                       else 16384), arm
    assert by["seqs-18"].args == {"np": 18, "c": 18 * 16384}
    assert by["ubatch-2048"].differs == ("ub",) and by["shared-pool"].differs == ("kvu",)
    assert by["llama.cpp-defaults"].args == {"b": None, "np": None, "ub": None}
    assert dropped[0] == f"lpt-512/1024/2048: {knobs.no_threshold}"
    assert "chunk-2048: the same scheduling as agent" in dropped
    # A micro-batch above the step budget is capped at it: ub 4096 with b 2048 is ub 2048.
    capped, _ = arms("agent", {"agent": {**agent, "ub": 4096}}, largest_n=2, knobs=knobs,
                     memory=memory)
    assert "ubatch-2048" not in {a.name for a in capped}


def test_an_arm_whose_name_is_not_a_profile_name_is_refused_by_name() -> None:
    """An arm named past the profile-name bound (the arm's files are named after it; a
    recipe's own profiles are bounded at load): refused as an error that names the rule,
    before tune.json holds it."""
    long = "p" * 101
    with pytest.raises(Sm121Error, match="at most 100 characters"):
        Candidate(long, long).to_json()
    assert Candidate("llama.cpp-defaults", "agent").to_json().name == "llama.cpp-defaults"
