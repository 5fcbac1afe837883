"""tune's predictions take the cold start at the rate its own knee measured (tune/cold_rate.py):
the knee's engine-window rate at the step nearest the first prompt its engine counted
(scenarios/knee/nearest_step.py, the rule benchmarks/cold_start.py validates with), said with
its source; none where nothing was counted or no step is near, and tune says why. tune.json
and the report carry it; an older tune.json (none kept) still loads and reports.

The knee is the H200 sitting's (docs/results/gpu-h200/tune-capacity: 34,602 tok/s for a fresh
16,384-token prompt), with the first prompt its runs counted (17,747 tokens, Llama's template,
the verdict's 64-token margin a turn): the chunk-2048 arms are predicted at most 23 (the cold
start binds) where KV alone said 37 on the knee's pool; they measured 16 <= N* < 28."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest

from sm121.bench.scenarios.agents.capacity import nominal_prefix
from sm121.bench.scenarios.knee.models import KneeSummary
from sm121.bench.scenarios.knee.nearest_step import NearestStep, nearest_step
from sm121.bench.tune.before_boot import before_boot
from sm121.bench.tune.candidates import Candidate, arms
from sm121.bench.tune.capacity import first_probes
from sm121.bench.tune.cold_rate import cold_rate, said
from sm121.bench.tune.files import KneeFile
from sm121.bench.tune.first_prompt import CountedPrompt
from sm121.bench.tune.knee_step import KneeFacts
from sm121.bench.tune.predict import MeasuredPool, predict_before_boot
from sm121.bench.tune.report_predicted import section
from sm121.bench.tune.request import TuneRequest
from sm121.bench.tune.result import (
    Binding,
    ColdRateRecord,
    PredictionRecord,
    RequestRecord,
    TuneRecord,
    TuneResult,
)
from sm121.engines.registry import adapter_for
from sm121.memory.capacity_types import Resource
from sm121.plan.effective import profile_args
from sm121.recipes.loader import load_recipe
from sm121.recipes.schema import EngineKind

ROOT = Path(__file__).resolve().parents[3]
SITTING = ROOT / "docs" / "results" / "gpu-h200" / "tune-capacity" / "tune-results.tar.gz"
FP8_KNEE = ROOT / "docs" / "results" / "cpu-testbed" / "tune-fp8" / "knee.json"
# the committed tune.json files this sm121 reads (the CPU testbed's first tune, older still,
# predates its result's claims and is read by tests/unit/tune/test_cpu_tune_data.py apart)
COMMITTED = [ROOT / "docs" / "results" / "gpu-h200" / "tune-capacity" / "tune.json",
             ROOT / "docs" / "results" / "cpu-testbed" / "tune-fp8" / "tune.json"]
VLLM = adapter_for(EngineKind.VLLM)
WORKLOAD = "coding-agent-with-batch"
COUNTED = CountedPrompt(workload=WORKLOAD, turns=5, max_model_len=131_072,
                        prefix_tokens=nominal_prefix(WORKLOAD, 5, 131_072),
                        first_prompt_tokens=17_747, turn_template_tokens=64)
SOURCE = "measured on this stack by tune's knee, 16,384-token prompt"


@pytest.fixture(scope="module")
def knee(tmp_path_factory: pytest.TempPathFactory) -> dict:
    with tarfile.open(SITTING) as tar:
        handle = tar.extractfile("tune/knee.json")
        assert handle is not None
        return json.load(handle)


def _counted(knee: dict, counted: CountedPrompt | None = COUNTED) -> KneeFile:
    extra = {} if counted is None else {"first_prompt": counted.model_dump(mode="json")}
    return KneeFile.model_validate({**knee, **extra})


def test_the_rate_is_the_knees_at_the_step_nearest_the_first_prompt(knee):
    summary = KneeSummary.model_validate(knee["summary"])
    found = nearest_step(summary, 17_747)
    assert isinstance(found, NearestStep) and found.step == 16_384
    assert round(found.tok_s) == 34_602
    assert round(getattr(nearest_step(summary, 8_192), "tok_s", 0)) == 39_543  # one doubling
    assert nearest_step(summary, 5_000) == NearestStep(4_096, pytest.approx(44_460, abs=1))
    # near: within a factor of 2 of a step, either way; one doubling past the largest step
    assert isinstance(nearest_step(summary, 32_768), NearestStep)
    assert nearest_step(summary, 40_000) == (
        "the knee measured no prompt near 40,000 tokens (its steps: 128, 256, 512, 1,024, "
        "2,048, 4,096, 8,192, 16,384; near: within a factor of 2)")
    record = cold_rate(_counted(knee))
    assert (record.step, record.first_prompt_tokens, record.source) == (16_384, 17_747, SOURCE)
    assert said(record) == ("cold start: the prefill rate of a fresh first prompt: 34,602 "
                            f"tok/s, {SOURCE} (the step nearest the first prompt's 17,747 "
                            "tokens)")
    facts = KneeFacts.of(_counted(knee), "vllm")
    assert facts.fresh is not None and facts.fresh.source == SOURCE


def test_no_rate_where_no_step_is_near_or_nothing_was_counted(knee):
    # a knee capped at 512-token steps (the CPU fp8 tune's) against a 5,000-token first prompt
    small = KneeFile.model_validate({**json.loads(FP8_KNEE.read_text()), "first_prompt":
                                     COUNTED.model_copy(update={"first_prompt_tokens": 5_000})
                                     .model_dump(mode="json")})
    found = cold_rate(small)
    assert found.rate() is None and found.first_prompt_tokens == 5_000
    assert found.why == ("the knee measured no prompt near 5,000 tokens (its steps: 128, 512; "
                         "near: within a factor of 2)")
    # a knee without the count (the committed ones: measured before tune counted it)
    none = cold_rate(_counted(knee, None))
    assert none.rate() is None and none.why is not None
    assert none.why.startswith("no first prompt counted: the knee's file holds no count")
    # an engine that counted nothing
    failed = COUNTED.model_copy(update={"first_prompt_tokens": None,
                                        "error": "/tokenize answered 404"})
    assert cold_rate(_counted(knee, failed)).why == (
        "no first prompt counted: the knee's engine did not count it: /tokenize answered 404")
    # no engine window (llama-server has no prefill histograms)
    bare = KneeFile.model_validate({**knee, "summary": {**knee["summary"], "engine": None},
                                    "first_prompt": COUNTED.model_dump(mode="json")})
    assert cold_rate(bare).why == "the knee measured no prefill rate in the engine's window"
    assert KneeFacts(None, "vllm").fresh is None
    assert said(none).startswith("cold start: the prefill rate of a fresh first prompt: not "
                                 "known: no first prompt counted")


def test_a_prediction_names_the_cold_start_at_the_knees_rate_and_moves_the_first_probes(knee):
    args = {"gpu-memory-utilization": 0.78, "max-num-batched-tokens": 2048,
            "long-prefill-token-threshold": 1024, "max-num-seqs": 41}
    pool = MeasuredPool(769_024, 16, "the knee's boot", args, {}, 131_072)
    request = TuneRequest("gpu-llama", WORKLOAD, "ttft_p95=2s", 16, Path("unused"), 8000,
                          budget_s=2760, turns=5, max_agents=40)
    fresh = cold_rate(_counted(knee)).rate()
    without = predict_before_boot(request, args, {}, [pool], VLLM, COUNTED)
    found = predict_before_boot(request, args, {}, [pool], VLLM, COUNTED, fresh)
    assert without is not None and found is not None
    assert (without.predicted, without.binding) == (37, Resource.KV)
    assert without.allowance(Resource.COLD_START).agents is None  # not known without a rate
    assert (found.predicted, found.binding) == (23, Resource.COLD_START)
    assert found.allowance(Resource.COLD_START).how.startswith("misses the goodput target "
                                                               "from 24")
    assert f"at 34,602 tok/s ({SOURCE})" in (found.cold_start_arithmetic or "")
    # the search tests about 0.9x and 1.1x first: inside the measured 16 <= N* < 28
    assert first_probes(23, 40) == (20, 26) and first_probes(37, 40) == (33, 40)


def test_tune_says_the_rate_before_its_arms_and_tune_json_keeps_it(knee):
    recipe = load_recipe("gpu-llama").recipe
    request = TuneRequest("gpu-llama", WORKLOAD, "ttft_p95=2s", 16, Path("unused"), 8000,
                          budget_s=2760, turns=5, baselines=["agent-admission"], reps=1,
                          max_agents=40, sweep_points=2)
    found, _ = arms("agent-admission", {"agent-admission": profile_args(
        recipe, "agent-admission")}, request.largest_n, VLLM.scheduler)
    planned = before_boot(request, recipe, VLLM, _counted(knee), found,
                          VLLM.known_flags(recipe))
    assert planned.lines[1] == said(cold_rate(_counted(knee)))
    base = planned.predictions["agent-admission"]
    assert (base.text(), base.cold_start) == ("at most 23 agents (the cold start binds)",
                                              "allows 23")
    assert base.cold_prefill_tok_s is not None and round(base.cold_prefill_tok_s) == 34_602
    for arm in ("seqs-82", "lpt-512"):  # the chunk-2048 arms, as the baseline
        assert planned.predictions[arm].text() == "at most 23 agents (the cold start binds)"
    for arm in ("chunk-4096", "chunk-8192"):  # the cold start binds from more agents than KV
        assert planned.predictions[arm].text() == "at most 37 agents (KV binds)"
    # the cold start binds for the baseline, not KV: fp8 KV would add no agent
    assert planned.kv_arm == ("no fp8 KV arm: KV does not bind for agent-admission "
                              "(predicted 23: the cold start binds)")
    # without the count: not known, and why
    planned = before_boot(request, recipe, VLLM, _counted(knee, None), found,
                          VLLM.known_flags(recipe))
    assert planned.lines[1].startswith("cold start: the prefill rate of a fresh first prompt: "
                                       "not known: no first prompt counted")
    assert planned.predictions["agent-admission"].cold_start == "not known"
    assert planned.predictions["agent-admission"].cold_prefill_tok_s is None


def test_the_report_carries_the_rate_and_an_older_tune_json_still_loads(knee):
    for path in COMMITTED:  # none kept a rate: they load, and report no line for it
        record = TuneRecord.model_validate(json.loads(path.read_text()))
        assert record.cold_rate is None
        assert all(p.cold_start is None for p in record.predictions.values())
        assert not [line for line in section(record, None) if "cold start's rate" in line]
    rate = cold_rate(_counted(knee))
    record = TuneRecord(
        request=RequestRecord(recipe="r", workload="w", slo="s", agents=16, budget_s=1),
        candidates=[Candidate("agent", "agent").to_json(), Candidate("old", "agent").to_json(),
                    Candidate("blind", "agent").to_json()],
        predictions={"agent": PredictionRecord(predicted=23, binding="the cold start",
                                               at_most=True, cold_start="allows 23",
                                               cold_prefill_tok_s=rate.tok_s),
                     "old": PredictionRecord(predicted=39, binding="KV"),
                     "blind": PredictionRecord(predicted=39, binding="KV",
                                               cold_start="not known")},
        cold_rate=rate,
        result=TuneResult(table=[], ranking=[], chosen=None, baseline=None, reference=None,
                          claims=[], binding=Binding(met=False, candidates=[], text=""),
                          cost_bound=0.05, device="d", engine="e", date="t"))
    again = TuneRecord.model_validate(json.loads(json.dumps(record.to_json())))
    assert again.cold_rate == rate
    text = "\n".join(section(again, None))
    assert ("The cold start's rate (a fresh first prompt's prefill): 34,602 tok/s, measured on "
            "this stack by tune's knee, 16,384-token prompt (the step nearest the first "
            "prompt's 17,747 tokens).") in text
    assert "| the cold start before its boot |" in text
    assert "| working set not recorded | allows 23 at 34,602 tok/s | - |" in text
    assert "| working set not recorded | not recorded | - |" in text
    assert "| working set not recorded | not known (no rate) | - |" in text
    unknown = ColdRateRecord(why="no first prompt counted: x")
    assert unknown.text() == "not known: no first prompt counted: x"
