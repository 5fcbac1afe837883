"""`sm121 tune tiny-llamacpp` on the real llama-server: a tiny knee of its own (llama-server has
no prefill or decode histograms: the client window only), then llama.cpp's own knobs through
its adapter: slots `np` (the total context `c` grows with them, so every arm gives each agent
the recipe's 16,384-token window, as the real server reports it), the step budget `b`, the
micro-batch `ub` and the shared pool `kvu`; no long-prefill threshold arms, dropped with the
adapter's reason; each arm's pool predicted before any boot from the knee's, scaled by its
context, and no fp8 KV arm, with llama.cpp's reason. Five arms on one boot each, one
repetition and one capacity probe, the pick and the `tuned` profile. It asserts the search's shape, not its numbers; about 30 s here.

It boots only engines of its own, so `make test` runs it in the unit session
(`beside_unit`, scripts/test-tiers.sh)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support import invoke_cli
from support.llamacpp import put_on_path

from sm121.bench.tune.candidates import Candidate, merged_args
from sm121.engines.registry import adapter_for
from sm121.recipes.loader import load_recipe
from sm121.recipes.schema import EngineKind

pytestmark = [pytest.mark.integration, pytest.mark.beside_unit]

ENGINE = adapter_for(EngineKind.LLAMA_CPP)
KNOBS, MEMORY = ENGINE.scheduler, ENGINE.memory
PER_SLOT = 16384  # tiny-llamacpp: c 65536 over np 4
WORKLOAD = """preset: coding-agent-with-batch
system_prompt_tokens: 400
task_tokens: 40
tools: {count: 2, tokens_each: 40}
append_tokens: [40, 80]
output_tokens: [8, 12]
think_time_s: [0.1, 0.2]
background: {prompt_tokens: 6000, output_tokens: 4}
"""


def test_tune_searches_llama_cpps_own_knobs_and_keeps_each_agents_window(
        tmp_path: Path, sm121_home: Path) -> None:
    put_on_path()
    workload = tmp_path / "small.yaml"
    workload.write_text(WORKLOAD)
    out = tmp_path / "tune"
    user_copy = sm121_home / "recipes" / "tiny-llamacpp.yaml"
    try:
        result = invoke_cli(
            "tune", "tiny-llamacpp", "--workload", str(workload), "--slo", "ttft_p95=10s",
            "--agents", "1", "--max-agents", "2", "--turns", "2", "--baselines", "",
            "--max-candidates", "5", "--reps", "1", "--sweep-points", "1", "--rest", "0",
            "--budget", "6m", "--rep-estimate", "30", "--boots", "1",
            "--steps", "128,512", "--batches", "1,2", "--knee-reps", "1", "--out", str(out))
        state = json.loads((out / "tune.json").read_text())
        assert state["status"] == "complete"
        arms = {a.name: a for a in map(Candidate.from_json, state["candidates"])}
        assert list(arms)[:5] == ["agent", "chunk-8192", "seqs-8", "chunk-4096", "ubatch-256"]
        assert {"ubatch-1024", "ubatch-2048", "shared-pool", "llama.cpp-defaults"} <= set(arms)
        assert not [n for n in arms if n.startswith("lpt-")]
        assert any(d.startswith("lpt-512/1024/2048: ") and KNOBS.no_threshold in d
                   for d in state["dropped"])
        recipe = load_recipe("tiny-llamacpp").recipe
        for arm in arms.values():  # one knob per step-1 arm, in llama.cpp's names
            if arm.source == "step 1":
                assert len(arm.differs) == 1, arm
            args = merged_args(recipe, arm)
            if arm.name != "llama.cpp-defaults":  # the slots hold the largest N + 1 ...
                assert int(str(args[KNOBS.max_num_seqs])) >= 3, arm
                assert MEMORY.per_request_context(args) == PER_SLOT or (  # ... each its window
                    arm.name == "shared-pool" and args[MEMORY.shared_pool] is True)
        assert arms["seqs-8"].differs == (KNOBS.max_num_seqs,)
        assert merged_args(recipe, arms["seqs-8"])[MEMORY.max_model_len] == 8 * PER_SLOT
        assert arms["ubatch-256"].differs == (KNOBS.micro_batch,)
        # The real server gave every measured arm's agents the recipe's per-slot window.
        ab = json.loads((out / "ab-agents.json").read_text())
        measured = [s for s in ab["samples"] if not s.get("error")]
        assert {s["profile"] for s in measured} == set(list(arms)[:5])
        assert all(s["server"]["max_model_len"] == PER_SLOT for s in measured), measured
        pools = {b["name"]: b["boot"]["kv_pool_tokens"] for b in ab["boots"]}
        assert pools["agent"] == 4 * PER_SLOT and pools["seqs-8"] == 8 * PER_SLOT
        # Before any boot: the knee's pool, scaled by each arm's context (the pool is the
        # context), as the arms' own boots then logged; no fp8 arm, with llama.cpp's reason.
        before = state["predictions"]
        assert {n: before[n]["pool_tokens"] for n in pools} == pools
        assert "(the pool is the context)" in before["seqs-8"]["pool_source"]
        assert state["kv_arm"] == ("no fp8 KV arm: llama.cpp has no fp8 KV cache type (its "
                                   "`ctk` takes none)")
        # Its own knee, by the client window (llama-server has no prefill histograms).
        knee = json.loads((out / "knee.json").read_text())
        assert knee["status"] == "complete" and knee["summary"]["client"]["knee"]["knee_at"]
        # While the knee's engine was up it counted the sessions' first prompt (llama-server's
        # /tokenize through its /apply-template, the tools rendered by the GGUF's template):
        # more than the workload's nominal 520 tokens; every arm was predicted from it.
        counted = knee["first_prompt"]
        assert counted["error"] is None and counted["first_prompt_tokens"] > 520, counted
        assert counted["max_model_len"] == PER_SLOT and counted["turn_template_tokens"] >= 0
        assert "working set: the expected session" in result.stdout + result.stderr
        assert before["agent"]["first_prompt_tokens"] == counted["first_prompt_tokens"]
        assert "counted on the knee's engine" in (out / "report.md").read_text()
        # The cold start's rate is the knee's engine window's (tune/cold_rate.py): llama-server
        # has none, so the cold start stays not known, said in tune.json and the report.
        why = "the knee measured no prefill rate in the engine's window"
        assert state["cold_rate"] == {"first_prompt_tokens": counted["first_prompt_tokens"],
                                      "why": why}
        assert {p["cold_start"] for p in before.values() if p.get("predicted")} == {"not known"}
        assert f"The cold start's rate (a fresh first prompt's prefill): not known: {why}." in \
            (out / "report.md").read_text()
        rows = {r["name"]: r for r in state["result"]["table"]}
        assert set(rows) == set(list(arms)[:5])
        assert all([n for n, _ in r["capacity"]["tested"]] == [1, 2] for r in rows.values())
        assert state["result"]["engine"].startswith("llama.cpp b11434")
        report = (out / "report.md").read_text()
        assert "llama-server has no long-prefill threshold" in report
        assert "`llama.cpp-defaults`, which sets none" in report
        assert "no fp8 KV arm: llama.cpp has no fp8 KV cache type" in report
        assert "## Predicted against measured" in report
        text = user_copy.read_text()
        assert "# sm121 tune: begin" in text and "llama.cpp b11434" in text
        assert "written into" in result.stdout
    finally:
        user_copy.unlink(missing_ok=True)
