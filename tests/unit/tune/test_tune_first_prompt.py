"""The workload's first prompt counted on the knee's engine (tune/first_prompt.py): kept in
knee.json (an older knee file, without it, still loads: a resume), and every arm's prediction
before its boot then takes the expected session instead of the longest one, saying so.

The numbers are the H100 capacity sitting's (docs/results/gpu-h100/capacity/rejudged.txt):
long-session at 6 turns on a pool of 392,032 tokens, its first prompt counted at 25,517
tokens: the expected session (49,729 tokens) holds 7 agents, the longest (59,048) 6; the
measured cliff was 9."""

from __future__ import annotations

import json
import socket
from pathlib import Path

from sm121.bench.scenarios.agents.capacity import NOMINAL_PREFIX
from sm121.bench.tune.before_boot import before_boot, record
from sm121.bench.tune.candidates import arms
from sm121.bench.tune.files import KneeFile
from sm121.bench.tune.first_prompt import CountedPrompt, count_on, said
from sm121.bench.tune.knee_step import KneeFacts
from sm121.bench.tune.predict import MeasuredPool, predict_before_boot
from sm121.bench.tune.request import TuneRequest
from sm121.engines.registry import adapter_for
from sm121.plan.effective import profile_args
from sm121.recipes.loader import load_recipe
from sm121.recipes.schema import EngineKind

ROOT = Path(__file__).resolve().parents[3]
CPU_KNEE = ROOT / "docs" / "results" / "cpu-testbed" / "tune" / "knee.json"
VLLM = adapter_for(EngineKind.VLLM)
ARGS = {"gpu-memory-utilization": 0.9, "max-num-batched-tokens": 4096,
        "long-prefill-token-threshold": 1024, "max-num-seqs": 41}
H100_POOL = MeasuredPool(392_032, 16, "the knee's boot", ARGS, {}, 131_072)
# long-session fitted to 131,072 tokens: unscaled (14,000 + 200 + 18 x 500)
COUNTED = CountedPrompt(workload="long-session", turns=6, max_model_len=131_072,
                        prefix_tokens=23_200, first_prompt_tokens=25_517,
                        turn_template_tokens=64)


def _request(workload: str = "long-session", turns: int = 6) -> TuneRequest:
    return TuneRequest("gpu-llama", workload, "ttft_p95=2s", 8, Path("unused"), 8000,
                       budget_s=1800, turns=turns, max_agents=16)


def test_a_knee_file_keeps_the_count_and_an_older_one_without_it_still_loads():
    old = json.loads(CPU_KNEE.read_text())
    assert "first_prompt" not in old
    knee = KneeFile.model_validate(old)  # a knee measured before tune counted: a resume
    assert knee.first_prompt is None and KneeFacts.of(knee, "vllm").first_prompt is None
    assert "first_prompt" not in knee.to_json()  # written back as it came
    counted = CountedPrompt(workload="coding-agent-with-batch", turns=2, max_model_len=65_536,
                            prefix_tokens=15_200, first_prompt_tokens=17_747,
                            turn_template_tokens=9)
    again = KneeFile.model_validate(json.loads(json.dumps(
        {**old, "first_prompt": counted.model_dump(mode="json")})))
    assert again.first_prompt == counted
    assert KneeFile.model_validate(again.to_json()).first_prompt == counted
    assert KneeFacts.of(again, "vllm").first_prompt == counted
    # an engine that counted nothing: why, kept as well
    failed = CountedPrompt(workload="w", turns=2, error="/tokenize answered 404")
    assert KneeFile.model_validate({**old, "first_prompt": failed.to_json()}).first_prompt \
        == failed


def test_a_prediction_before_a_boot_takes_the_expected_session_the_knee_counted():
    request = _request()
    bound = predict_before_boot(request, ARGS, {}, [H100_POOL], VLLM)
    counted = predict_before_boot(request, ARGS, {}, [H100_POOL], VLLM, COUNTED)
    assert bound is not None and counted is not None
    assert (bound.predicted, bound.working_set_tokens, bound.first_prompt_tokens) == \
        (6, 59_048, None)
    assert bound.prefix_source is not None and bound.prefix_source.startswith(NOMINAL_PREFIX)
    assert "the knee's file holds no count" in bound.prefix_source
    assert (counted.predicted, counted.working_set_tokens, counted.first_prompt_tokens) == \
        (7, 49_729, 25_517)
    assert counted.prefix_source == ("as the knee's engine's /tokenize renders it (system "
                                     "prompt, tools, task; 64 template tokens a turn)")
    assert "first prompt 25,517 tokens, as the knee's engine's /tokenize" in \
        counted.allowance(counted.binding).how  # type: ignore[arg-type]
    kept = record(counted, 8)
    assert kept.working_set() == ("the expected session, 49,729 tokens (first prompt 25,517, "
                                  "counted on the knee's engine)")
    assert record(bound, 8).working_set() == "the longest session, 59,048 tokens (a bound)"


def test_where_the_count_does_not_hold_the_bound_stays_and_says_why():
    request = _request()
    # an engine without /tokenize (or a template that refuses the tools): nothing counted
    failed = CountedPrompt(workload="long-session", turns=6, max_model_len=131_072,
                           prefix_tokens=23_200, error="/tokenize at http://x answered 404")
    found = predict_before_boot(request, ARGS, {}, [H100_POOL], VLLM, failed)
    assert found is not None and found.predicted == 6 and found.first_prompt_tokens is None
    assert "the knee's engine did not count it: /tokenize at http://x answered 404" in \
        (found.prefix_source or "")
    assert said(failed) == ("working set: the longest session, a bound that errs low: the "
                            "knee's engine did not count it: /tokenize at http://x answered 404")
    # an arm whose context fits the workload at other sizes than the ones counted
    small = {**ARGS, "max-model-len": 32_768}
    found = predict_before_boot(request, small, {}, [H100_POOL], VLLM, COUNTED)
    assert found is not None and found.first_prompt_tokens is None
    assert "counted it fitted to 131,072 tokens of context; at 32,768 the workload fits " \
        "at other sizes" in (found.prefix_source or "")
    # another workload than the one counted
    other = predict_before_boot(_request("coding-agent"), ARGS, {}, [H100_POOL], VLLM,
                                COUNTED)
    assert other is not None and other.first_prompt_tokens is None


def test_tune_says_the_working_set_its_arms_were_predicted_with():
    recipe = load_recipe("tiny-cpu").recipe
    request = TuneRequest("tiny-cpu", "coding-agent-with-batch", "ttft_p95=10s", 1,
                          Path("unused"), 8000, budget_s=900, turns=2, max_agents=2)
    found, _ = arms("agent", {"agent": profile_args(recipe, "agent")}, request.largest_n,
                    VLLM.scheduler)
    old = json.loads(CPU_KNEE.read_text())
    counted = CountedPrompt(workload="coding-agent-with-batch", turns=2, max_model_len=65_536,
                            prefix_tokens=15_200, first_prompt_tokens=17_747,
                            turn_template_tokens=9)
    knee = KneeFile.model_validate({**old, "first_prompt": counted.model_dump(mode="json")})
    planned = before_boot(request, recipe, VLLM, knee, found, VLLM.known_flags(recipe))
    assert planned.lines[0] == ("working set: the expected session, its first prompt counted "
                                "on the knee's engine's /tokenize: 17,747 tokens (system "
                                "prompt, tools, task), 9 template tokens a turn")
    agent = planned.predictions["agent"]
    assert agent.first_prompt_tokens == 17_747 and agent.working_set_tokens is not None
    assert "counted on the knee's engine" in agent.working_set()
    # the same knee without the count: the bound, and why
    planned = before_boot(request, recipe, VLLM, KneeFile.model_validate(old), found,
                          VLLM.known_flags(recipe))
    assert planned.lines[0].startswith("working set: the longest session, a bound that errs "
                                       "low: the knee's file holds no count")
    assert planned.predictions["agent"].first_prompt_tokens is None


def test_an_engine_that_does_not_answer_counts_nothing_and_the_knee_goes_on():
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    found = count_on(f"http://127.0.0.1:{port}", "long-session", 6)
    assert found.first_prompt_tokens is None and found.counted() is None
    assert found.error and found.workload == "long-session" and found.turns == 6
