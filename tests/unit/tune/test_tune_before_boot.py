"""tune's arms before any boot (issue 44, "tune confirms a prediction"): each arm predicted
from the knee's boot, the fp8 KV arm added where KV binds for the baseline (with the engine's
flag, doubling the KV allowance), and the arms predicted below the target measured last and
dropped first, the reason said in the console and in the report.

The knee and the arms are the H200 sitting's (docs/results/gpu-h200/tune-capacity): the knee
booted `agent` at GMU 0.78 (a pool of 769,024 tokens), the arms measured 772,720-781,520."""

from __future__ import annotations

import json
import tarfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from sm121.bench.ab import AbRequest, open_results
from sm121.bench.scenarios.agents.capacity import NOMINAL_PREFIX
from sm121.bench.tune import arm_boots
from sm121.bench.tune.before_boot import before_boot, knee_pool
from sm121.bench.tune.candidates import Candidate, arms
from sm121.bench.tune.files import AbFile, KneeFile
from sm121.bench.tune.knee_step import KneeFacts
from sm121.bench.tune.kv_arm import FP8_ARM, fp8_arm
from sm121.bench.tune.predict import (
    MeasuredPool,
    kv_scale,
    pool_before_boot,
    predict_before_boot,
)
from sm121.bench.tune.report_predicted import console, section
from sm121.bench.tune.request import TuneRequest, agent_params
from sm121.bench.tune.result import ArmRow, CapacityRecord, Probe
from sm121.bench.tune.state import TuneState
from sm121.engines.registry import adapter_for
from sm121.memory.capacity_types import Resource
from sm121.plan.effective import profile_args
from sm121.recipes.loader import load_recipe
from sm121.recipes.schema import EngineKind

ROOT = Path(__file__).resolve().parents[3]
SITTING = ROOT / "docs" / "results" / "gpu-h200" / "tune-capacity" / "tune-results.tar.gz"
CPU_KNEE = ROOT / "docs" / "results" / "cpu-testbed" / "tune" / "knee.json"
VLLM = adapter_for(EngineKind.VLLM)
# launch's error when the engine dies at boot (launch/local.py), with vLLM 0.32's refusal of
# fp8 KV on a CPU without AVX-512 or AMX (vllm/v1/attention/backends/cpu_attn.py)
REFUSED = ("the engine did not become ready: the engine exited while waiting for its API port"
           "\n  cause: NotImplementedError: FP8 KV cache on CPU requires x86 with AVX-512 or "
           "AMX.\n  last log lines:\n    ...")
LLAMACPP = adapter_for(EngineKind.LLAMA_CPP)


@pytest.fixture(scope="module")
def h200(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("h200")
    with tarfile.open(SITTING) as tar:
        tar.extractall(out, filter="data")
    return out / "tune"


def _request(out: Path, agents: int = 16, max_agents: int = 40) -> TuneRequest:
    return TuneRequest("gpu-llama", "coding-agent-with-batch", "ttft_p95=2s", agents, out, 8000,
                       budget_s=2760, turns=5, baselines=["agent-admission"], reps=1,
                       max_agents=max_agents, sweep_points=2)


def _arms(request: TuneRequest, h200: Path):
    recipe = load_recipe("gpu-llama").recipe
    found, _ = arms("agent-admission", {"agent-admission": profile_args(
        recipe, "agent-admission")}, request.largest_n, VLLM.scheduler)
    knee = KneeFile.model_validate(json.loads((h200 / "knee.json").read_text()))
    return before_boot(request, recipe, VLLM, knee, found, VLLM.known_flags(recipe))


def test_where_kv_binds_for_the_baseline_an_fp8_arm_is_added_with_twice_the_pool(h200):
    planned = _arms(_request(h200), h200)
    names = [a.name for a in planned.arms]
    # after the one-knob arms, before vLLM's defaults; nothing below the target 16: the
    # priority order otherwise stays
    assert names == ["agent-admission", "reference", "seqs-82", "lpt-512", "lpt-2048",
                     "chunk-4096", "chunk-8192", FP8_ARM, "vllm-defaults"]
    kv = planned.arms[names.index(FP8_ARM)]
    assert kv.base == "agent-admission" and kv.differs == ("kv-cache-dtype",)
    assert kv.args == {"max-num-seqs": 41, "kv-cache-dtype": "fp8"}
    assert "fp8 KV may change the model's outputs" in kv.why
    base, fp8 = planned.predictions["agent-admission"], planned.predictions[FP8_ARM]
    # the knee's pool: 769,024 / 16 = 48,064 blocks / 1,231 a session = 39 (KV binds)
    assert (base.predicted, base.binding, base.pool_tokens) == (39, "KV", 769_024)
    # fp8: twice the tokens in the same memory (78 sessions), so max-num-seqs 41 binds
    assert (fp8.pool_tokens, fp8.predicted, fp8.binding) == (1_538_048, 40, "sequences")
    assert "x2 for kv-cache-dtype fp8" in (fp8.pool_source or "")
    assert planned.kv_arm.startswith("fp8 KV arm kv-fp8: KV binds for agent-admission "
                                     "(predicted 39)")
    assert all(p.below is None for p in planned.predictions.values())
    assert "predicted before its boot: kv-fp8: at most 40 agents (sequences binds); pool " \
        "1,538,048 tokens from the knee's boot x2 for kv-cache-dtype fp8" in "\n".join(
            planned.lines)


def test_arms_predicted_below_the_target_go_last_and_say_why(h200):
    # target 40: every 16-bit arm is predicted 39 (KV); the fp8 arm holds it: it goes first
    planned = _arms(_request(h200, agents=40, max_agents=40), h200)
    names = [a.name for a in planned.arms]
    assert names[0] == FP8_ARM and names[1:3] == ["agent-admission", "reference"]
    below = planned.predictions["agent-admission"].below
    # "at most": tune knows no throughput at the workload's depth (the step budget)
    assert below == "predicted at most 39 agents (KV binds), below the target 40"
    assert planned.predictions[FP8_ARM].below is None
    (said,) = [line for line in planned.lines if line.startswith("measured last")]
    assert said.endswith(": agent-admission, reference, seqs-82, lpt-512, lpt-2048, "
                         "chunk-4096, chunk-8192, vllm-defaults (predicted at most 39 agents "
                         "(KV binds), below the target 40)")


def test_no_fp8_arm_where_kv_does_not_bind_or_the_engine_has_none():
    recipe = load_recipe("tiny-cpu").recipe
    request = TuneRequest("tiny-cpu", "coding-agent-with-batch", "ttft_p95=10s", 1,
                          Path("unused"), 8000, budget_s=900, turns=2, max_agents=2)
    found, _ = arms("agent", {"agent": profile_args(recipe, "agent")}, request.largest_n,
                    VLLM.scheduler)
    knee = KneeFile.model_validate(json.loads(CPU_KNEE.read_text()))
    planned = before_boot(request, recipe, VLLM, knee, found, VLLM.known_flags(recipe))
    assert FP8_ARM not in [a.name for a in planned.arms]
    # the agent profile's max-num-seqs 6 (above the 3 the search needs) less the job's one
    assert planned.kv_arm == ("no fp8 KV arm: KV does not bind for agent (predicted 5: "
                              "sequences binds)")
    base = found[0]
    prediction = predict_before_boot(request, profile_args(recipe, "agent"), recipe.env,
                                     [knee_pool(knee, recipe)], VLLM)
    assert prediction is not None and prediction.binding is Resource.SEQUENCES
    # llama.cpp: its KV types have no fp8 (a helper of its own covers its q8_0)
    none, why = fp8_arm(base, {}, prediction, LLAMACPP, frozenset({"ctk"}))
    assert none is None and why == ("no fp8 KV arm: llama.cpp has no fp8 KV cache type "
                                    "(its `ctk` takes none)")
    # a release without the flag, or a baseline already at fp8
    assert "takes no --kv-cache-dtype" in fp8_arm(base, {}, prediction, VLLM, frozenset())[1]
    kv_bound = replace(prediction, binding=Resource.KV)
    assert fp8_arm(base, {"kv-cache-dtype": "fp8_e5m2"}, kv_bound, VLLM,
                   frozenset({"kv-cache-dtype"}))[1] == \
        "no fp8 KV arm: agent's KV is already fp8_e5m2"
    assert fp8_arm(base, {}, None, VLLM, frozenset({"kv-cache-dtype"}))[0] is None


def test_the_pool_before_a_boot_needs_the_same_memory_settings():
    boot = MeasuredPool(100_000, 16, "the knee's boot", {"gpu-memory-utilization": 0.78,
                        "max-num-batched-tokens": 16384, "max-model-len": 131072}, {}, 131072)
    request = _request(Path("unused"))
    same = {"gpu-memory-utilization": 0.78, "max-num-batched-tokens": 4096, "max-num-seqs": 41,
            "max-model-len": 65536}  # the context does not move vLLM's pool
    assert predict_before_boot(request, same, {}, [boot], VLLM) is not None
    for other in ({**same, "gpu-memory-utilization": 0.7}, {**same, "block-size": 32}):
        assert predict_before_boot(request, other, {}, [boot], VLLM) is None
    assert predict_before_boot(request, same, {"VLLM_CPU_KVCACHE_SPACE": "1"}, [boot],
                               VLLM) is None
    # fp8 doubles the tokens the same bytes hold, unless the block count is fixed
    assert kv_scale({}, {"kv-cache-dtype": "fp8"}, VLLM) == 2
    assert kv_scale({"dtype": "float32"}, {"dtype": "float32", "kv-cache-dtype": "fp8"},
                    VLLM) == 4
    assert kv_scale({"num-gpu-blocks-override": 724}, {"num-gpu-blocks-override": 724,
                    "kv-cache-dtype": "fp8"}, VLLM) == 1


def test_on_llama_cpp_the_pool_is_the_context_and_there_is_no_fp8_arm():
    """llama.cpp's pool is the context it is given (`c` cells, split over the `np` slots or
    shared): an arm whose slots grow the context (seqs-8: c 131072) gets the knee's pool
    scaled by it; the micro-batch, the shared pool and the cache type move no cell. tune says
    why there is no fp8 arm; its arms are llama.cpp's own (no lpt-*)."""
    recipe = load_recipe("tiny-llamacpp").recipe
    request = TuneRequest("tiny-llamacpp", "coding-agent-with-batch", "ttft_p95=10s", 1,
                          Path("unused"), 8000, budget_s=900, turns=2, max_agents=2)
    found, _ = arms("agent", {"agent": profile_args(recipe, "agent")}, request.largest_n,
                    LLAMACPP.scheduler, memory=LLAMACPP.memory,
                    defaults="llama.cpp-defaults")
    knee = MeasuredPool(65_536, 16, "the knee's boot", profile_args(recipe, "agent"), {},
                        16_384)
    planned = before_boot(request, recipe, LLAMACPP, None, found,
                          LLAMACPP.known_flags(recipe))
    assert [a.name for a in planned.arms] == [a.name for a in found]  # no knee: no reorder
    assert not [a for a in planned.arms if a.name.startswith("lpt-") or a.name == FP8_ARM]
    assert planned.kv_arm == ("no fp8 KV arm: llama.cpp has no fp8 KV cache type (its `ctk` "
                              "takes none)")
    by_name = {a.name: {**profile_args(recipe, a.base), **a.args} for a in found}

    def pool(name: str) -> int | None:
        got = pool_before_boot(by_name[name], {}, [knee], LLAMACPP)
        return None if got is None else got[0].tokens

    assert pool("agent") == pool("ubatch-256") == pool("shared-pool") == 65_536
    assert pool("seqs-8") == 131_072  # 8 slots of the same 16,384 tokens
    assert pool("llama.cpp-defaults") == 65_536  # the recipe's c, over the engine's slots
    assert pool_before_boot({**by_name["agent"], "c": None}, {}, [knee], LLAMACPP) is None
    assert kv_scale({}, {"ctk": "q8_0"}, LLAMACPP) == 1  # the same cells, fewer bytes
    seqs = predict_before_boot(request, by_name["seqs-8"], {}, [knee], LLAMACPP)
    assert seqs is not None and seqs.pool is not None
    assert "x2 for c 131072 (the pool is the context)" in seqs.pool.source


def test_a_dropped_arm_is_said_in_the_console_and_the_report(tmp_path):
    """The budget left holds no boot: the arm predicted below the target is dropped, its
    reason printed; the report's table has it beside the measured arms."""
    with tarfile.open(SITTING) as tar:
        tar.extractall(tmp_path, filter="data")
    request = _request(tmp_path / "tune")
    state = TuneState(request.out, request.to_record())
    state.record.predictions = {"vllm-defaults": _below("vllm-defaults")}
    arms_ = [Candidate.from_json(c) for c in state.record.candidates or []]
    ab_request = AbRequest(request.recipe, [c.name for c in arms_], "agents", 1,
                           agent_params(request).model_dump(),
                           request.out / "ab-agents.json", request.port, resume=True,
                           variants={c.name: (c.base, dict(c.args)) for c in arms_})
    results = open_results(ab_request)
    results.data["samples"] = [s for s in results.data["samples"]
                               if s["profile"] != "vllm-defaults"]
    lines: list[str] = []
    index = [c.name for c in arms_].index("vllm-defaults")
    assert not arm_boots.measure_arm(request, ab_request, state, results,
                                     KneeFacts(None, "vllm"), index, arms_, lines.append)
    assert lines[-1].startswith("dropped vllm-defaults: predicted 12 agents (KV binds), "
                                "below the target 16; ")
    assert "vllm-defaults" in state.record.skipped
    state.record.result.table = [r for r in state.record.result.table  # type: ignore[union-attr]
                                 if r.name != "vllm-defaults"]
    report = "\n".join(section(state.record, AbFile.model_validate(results.data)))
    assert ("| vllm-defaults | 12 agents (KV binds); pool 400,000 from given | the longest "
            "session, 19,684 tokens (a bound) | not recorded | - | not measured | - | dropped: "
            "predicted 12 "
            "agents (KV binds), below the target 16; the budget ran out |") in report
    assert "Working set: the longest session (every turn at its largest" in report
    said = console(state.record, None)
    assert "vllm-defaults: predicted 12 agents (KV binds); dropped: predicted 12 agents " \
           "(KV binds), below the target 16; the budget ran out" in said


def _below(name: str):
    from sm121.bench.tune.result import PredictionRecord

    return PredictionRecord(predicted=12, binding="KV", pool_tokens=400_000,
                            pool_source="given", line=f"{name}: 12", working_set_tokens=19_684,
                            prefix_source=NOMINAL_PREFIX,
                            below="predicted 12 agents (KV binds), below the target 16")


def test_the_report_holds_each_prediction_against_its_bracket():
    from sm121.bench.tune.report_predicted import against, refusals
    from sm121.bench.tune.result import PredictionRecord, RequestRecord, TuneRecord, TuneResult

    def row(name: str, lo: int, hi: int | None, predicted: int | None) -> ArmRow:
        return ArmRow(name=name, predicted=predicted, predicted_binding="KV",
                      capacity=CapacityRecord(lo=lo, hi=hi, text=f"{lo}..{hi}",
                                              tested=[(lo, True)]))

    assert against(39, row("a", 28, 40, 39)) == "inside"
    assert against(39, row("a", 16, 28, 39)) == "over: 28 missed"
    assert against(12, row("a", 16, None, 12)) == "under: 16 met"
    ab = AbFile.model_validate({"samples": [
        {"profile": FP8_ARM, "rep": 0, "error": REFUSED}]})
    refused = refusals(ab)
    assert refused == {FP8_ARM: ab.samples[0].error}
    record = TuneRecord(
        request=RequestRecord(recipe="r", workload="w", slo="s", agents=16, budget_s=1,
                              max_candidates=2),
        candidates=[Candidate("agent", "agent").to_json(),
                    Candidate(FP8_ARM, "agent").to_json(),
                    Candidate("lpt-512", "agent").to_json()],
        predictions={"agent": PredictionRecord(predicted=39, binding="KV"),
                     FP8_ARM: PredictionRecord(predicted=78, binding="KV"),
                     "lpt-512": _below("lpt-512")},
        kv_arm="fp8 KV arm kv-fp8: KV binds for agent (predicted 39)",
        result=TuneResult(table=[row("agent", 28, 40, 39)], ranking=["agent"], chosen="agent",
                          baseline="agent", reference=None, claims=[],
                          binding={"met": True, "candidates": [], "text": ""},
                          cost_bound=0.05, device="d", engine="e", date="t"))
    text = "\n".join(section(record, ab))
    assert "fp8 KV arm kv-fp8: KV binds for agent (predicted 39)." in text
    # a tune.json from before the working set was kept says so in its column; the bracket's
    # text is made from its numbers (the one tune.json keeps is a stranger's)
    assert "| agent | 39 agents (KV binds); pool 0 from None | working set not recorded | not " \
           "recorded | 39 agents (KV binds) | 28 <= N* < 40 | inside | measured |" in text
    assert f"| {FP8_ARM} | 78 agents (KV binds)" in text
    assert "| dropped: predicted 12 agents (KV binds), below the target 16; --max-candidates " \
        "2 |" in text
    assert "| not measured: its boot failed: the engine did not become ready: the engine " \
        "exited while waiting for its API port (cause: NotImplementedError: FP8 KV cache on " \
        "CPU requires x86 with AVX-512 or AMX.) |" in text


def test_the_tuned_profile_names_the_fp8_arm_as_what_set_the_kv_dtype(h200):
    from sm121.bench.tune.tuned_profile import tuned_profile

    request = _request(h200)
    planned = _arms(request, h200)
    kv = next(a for a in planned.arms if a.name == FP8_ARM)
    state = TuneState(h200, request.to_record())
    result = state.record.chosen().model_copy(deep=True)
    row = next(r for r in result.table if r.name == "agent-admission").model_copy(
        update={"name": FP8_ARM, "probes": [Probe(agents=40, slo_met=True)]})
    result.table.append(row)
    result.chosen = FP8_ARM
    profile = tuned_profile(request, result, [kv], h200 / "report.md")
    note = profile.comments["kv-cache-dtype"]
    assert note.startswith("arm kv-fp8 (differs from the baseline in kv-cache-dtype)")
    assert "fp8 KV may change the model's outputs" in note
    assert profile.args["kv-cache-dtype"] == "fp8"


def test_an_fp8_arm_the_engine_refuses_is_recorded_and_the_tune_goes_on(tmp_path, monkeypatch):
    """The real A/B boot path with the engine's refusal in place of a boot: the arm's runs are
    recorded as failed with the engine's reason, `measure_arm` goes on to the next arm, a resume
    passes it, and the report says why it was not measured."""
    from contextlib import contextmanager

    from sm121.bench import ab as ab_module
    from sm121.errors import Sm121Error

    with tarfile.open(SITTING) as tar:
        tar.extractall(tmp_path, filter="data")
    request = replace(_request(tmp_path / "tune"), budget_s=10 ** 6)
    state = TuneState(request.out, request.to_record())
    kv = Candidate(FP8_ARM, "agent-admission", {"max-num-seqs": 41, "kv-cache-dtype": "fp8"},
                   "fp8", "KV lever", ("kv-cache-dtype",))
    state.record.candidates = [*(state.record.candidates or []), kv.to_json()]
    arms_ = [Candidate.from_json(c) for c in state.record.candidates]
    ab_request = AbRequest(request.recipe, [c.name for c in arms_], "agents", 1,
                           agent_params(request).model_dump(),
                           request.out / "ab-agents.json", request.port, resume=True,
                           variants={c.name: (c.base, dict(c.args)) for c in arms_})
    results = open_results(ab_request)

    @contextmanager
    def refused(*args: Any, **kwargs: Any):
        raise Sm121Error(REFUSED, "full log: sm121 logs RUN")
        yield  # a generator, as booted is

    monkeypatch.setattr(ab_module, "booted", refused)
    lines: list[str] = []
    index = len(arms_) - 1
    knee = KneeFacts(None, "vllm")
    assert arm_boots.measure_arm(request, ab_request, state, results, knee, index, arms_,
                                 lines.append)
    failed = [s for s in results.data["samples"] if s["profile"] == FP8_ARM]
    assert failed and all("FP8 KV cache on CPU requires" in s["error"] for s in failed)
    assert any(line.startswith(f"  {FP8_ARM}: failed: the engine did not become ready")
               for line in lines)
    assert arm_boots.measure_arm(request, ab_request, state, results, knee, index, arms_,
                                 lines.append)
    assert len([s for s in results.data["samples"] if s["profile"] == FP8_ARM]) == len(failed)
    from sm121.bench.tune.result import PredictionRecord

    state.record.predictions = {FP8_ARM: PredictionRecord(predicted=40, binding="sequences")}
    text = "\n".join(section(state.record, AbFile.model_validate(results.data)))
    assert f"| {FP8_ARM} | 40 agents (sequences binds)" in text
    assert "not measured: its boot failed: the engine did not become ready" in text
