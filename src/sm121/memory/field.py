"""Boot results measured in the field, each tied to the stack it was measured on and its source,
shipped as built-in calibration and as the fixtures the planner must reproduce
(tests/unit/memory/test_field_facts.py).

Sources: the anchor benchmark's results file (dgx-spark-agent-serving-benchmarks,
results/RESULTS.md, measured 2026-08-01/02), which names the model behind each figure, and the
field report (reference/findings-original.txt). Three stacks:
- DS4 (DeepSeek-V4-Flash-0731, 2 nodes TP=2, vLLM 0.21.1 + DSpark): the GMU finding (section 7.2)
  and the A/B pools (section 4);
- Laguna S 2.1 (one node, vLLM 0.25.1): the UMA gate (section 6). Its three boots were Laguna's,
  not DS4's: "Laguna S 2.1's 262K production profile does not boot";
- GLM-5.2 (4 nodes, DCP 4): the field report's NFS section; it served, with settings unreported.

An observation calibrates only recipes that serve its stack (provenance.Stack.serves). Each
value is measured unless the observation's `assumed` names it."""

from __future__ import annotations

from typing import Any

from sm121.memory.calibration import Observation
from sm121.memory.provenance import Source, Stack

RESULTS = "anchor results file (dgx-spark-agent-serving-benchmarks results/RESULTS.md)"
REPORT = "field report (findings-original.txt)"

DS4_STACK = Stack(
    name="DS4 stack", model="deepseek-v4-flash",
    checkpoint="deepseek-ai/DeepSeek-V4-Flash-0731, 156 GB", nodes=2, tp=2,
    engine="0.21.1rc1.dev339 + DSpark overlay", image="vllm-dspark-runtime:dspark-nvfp4-stage-c",
    speculation="DSpark k=5", gmu=0.78, kv="nvfp4_ds_mla, block size 256")
LAGUNA_STACK = Stack(
    name="Laguna stack", model="laguna-s-2.1", checkpoint="Laguna S 2.1 (poolside), 67 GB NVFP4",
    nodes=1, tp=1, engine="0.25.1", image="vLLM 0.25.1 upstream", speculation="DFlash k=15",
    gmu=0.78, kv="FP4 backend FLASHINFER_CUTLASS")
GLM_STACK = Stack(
    name="GLM-5.2 stack", model="glm-5.2", checkpoint="GLM-5.2-MXFP4-Experts-GPTQ, 406 GB",
    nodes=4, tp=4, engine="not reported", image="not reported", speculation="not reported",
    gmu=None, kv="not reported")

GB10_TOTAL_GIB = 119.6  # measured: ~119.6 GiB visible per GB10 node (RESULTS.md section 7.2)
DS4_WEIGHTS_GIB = 77.7  # measured: "Weights take 77.7 GiB" per node at TP=2 (section 7.2)
LAGUNA_WEIGHTS_GIB = round(67e9 / 1024**3, 2)  # the 67 GB checkpoint: held in memory, assumed
LAGUNA_NEED_262K_GIB = 18.35  # measured: "Requirement (262K) 18.35 GiB" (section 6)
# measured on the Laguna stack: "~20 GB of reclaimable page cache (from reading the weights!)
# is booked as unavailable" (section 6); a rounded figure, and a statement about that stack only
FIELD_BOOKING_GB = 20.0
STATED_BOOKING_GB = {LAGUNA_STACK: FIELD_BOOKING_GB}

_DS4: dict[str, Any] = {"recipe": "deepseek-v4-flash-eugr-agent", "stack": DS4_STACK,
        "node_total_gib": GB10_TOTAL_GIB, "weights_gib": DS4_WEIGHTS_GIB}
_LAGUNA: dict[str, Any] = {"recipe": "laguna-s-2.1", "stack": LAGUNA_STACK, "profile": None,
           "node_total_gib": GB10_TOTAL_GIB, "weights_gib": LAGUNA_WEIGHTS_GIB,
           "gmu": 0.78, "page_cache_booked": True}
_UMA = Source(document=RESULTS, section="section 6, UMA memory gate (vLLM #48140)")
_LAGUNA_ASSUMED = ("weights_gib",  # the checkpoint's size: no boot logged the weights' memory
                   "gmu")  # the stack table's 0.78 for the production profile; section 6 omits it


def _ds4() -> list[Observation]:
    return [
        Observation(
            **_DS4, profile="agent", source="field: DS4 at GMU 0.70 left 2.39 GiB of KV",
            origin=Source(document=RESULTS, section="section 7.2, GPU-mem-util 0.70"),
            gmu=0.70, kv_gib=2.39, batched_tokens=2048, outcome="refused", max_model_len=32768,
            # "insufficient for even 32K": the report's judgement, not a refusal it shows;
            # the chunk is the agent profile's, the report does not give it
            assumed=("batched_tokens", "outcome", "max_model_len"),
            note="the boot that showed GMU is a KV lever, not a safety lever"),
        Observation(
            **_DS4, profile="agent", source="field: DS4 agent-2048 at GMU 0.78",
            origin=Source(document=RESULTS, section="section 4, KV pool (re-read after restart)"),
            gmu=0.78, pool_tokens=2669829, max_concurrency=2.55, max_model_len=1048576,
            batched_tokens=2048, outcome="booted"),
        Observation(
            **_DS4, profile="batch", source="field: DS4 batch-8192 at GMU 0.78",
            origin=Source(document=RESULTS, section="section 4, KV pool (not re-verified)"),
            # 1.59x is the report's; its own pool gives 1,598,763 / 1,048,576 = 1.52x. Kept as
            # reported, and printed as not following from the pool.
            gmu=0.78, pool_tokens=1598763, max_concurrency=1.59, max_model_len=1048576,
            batched_tokens=8192, outcome="booted"),
    ]


def _laguna() -> list[Observation]:
    boots = [
        Observation(**_LAGUNA, source=f"field: {label}", origin=_UMA, kv_gib=kv,
                    max_model_len=context, need_gib=need, outcome=outcome, pool_tokens=pool,
                    assumed=_LAGUNA_ASSUMED + (("need_gib",) if context == 32768 else ()),
                    note="the KV vLLM reported with the page cache of its own load booked")
        for label, kv, context, need, outcome, pool in (
            ("Laguna 262K boot, cold JIT (RESULTS.md section 6)",
             4.22, 262144, LAGUNA_NEED_262K_GIB, "refused", None),
            ("Laguna 262K boot, warm JIT (RESULTS.md section 6)",
             5.18, 262144, LAGUNA_NEED_262K_GIB, "refused", None),
            # "~2.3 GiB": a rounded need, so marked assumed; the pool is measured
            ("Laguna 32K boot, warm JIT (RESULTS.md section 6)",
             5.34, 32768, 2.3, "booted", 67236))]
    # "Operational profiles: 32K-64K boots normally (keep the page cache); 128K-262K requires
    # drop_caches": the section's summary; it shows boots only at 32K and 262K
    operational = [
        Observation(**_LAGUNA, source=f"field: Laguna {context // 1024}K {outcome}",
                    origin=Source(document=RESULTS, section="section 6, operational profiles"),
                    max_model_len=context, outcome=outcome,
                    assumed=(*_LAGUNA_ASSUMED, "outcome"))
        for context, outcome in ((65536, "booted"), (131072, "refused"))]
    return boots + operational


def _glm() -> list[Observation]:
    return [Observation(
        recipe="glm-5.2", profile=None, stack=GLM_STACK, source="field: GLM-5.2 served",
        origin=Source(document=REPORT, section="NFS / weights over the management link"),
        outcome="booted", node_total_gib=GB10_TOTAL_GIB,
        note="it served for a session: the recipe's settings booted there; the report gives "
             "neither its GMU nor its max-model-len nor its KV")]


def builtin_observations() -> list[Observation]:
    return _ds4() + _laguna() + _glm()
