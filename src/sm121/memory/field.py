"""Boot results measured in the field, shipped as built-in calibration and as the fixtures
the planner must reproduce (tests/unit/memory/test_field_facts.py).

Source: dgx-spark-agent-serving-benchmarks v0.1.1 (2026-08), DeepSeek-V4-Flash DSpark,
TP=2 on 2x GB10, vLLM 0.21.1rc1.dev339 + DSpark overlay. Each value is a measurement unless
its comment says otherwise.

The UMA-gate paragraph of the report does not name its model. These observations assume
the recipe the report is about (deepseek-v4-flash-eugr-agent, profile agent, GMU 0.78): the
paragraph sits between the DS4 GMU finding and the DS4 repetition_penalty finding. Against
that: its 8.75 / 11.5 s per shard are the Laguna S 2.1 load times of the cold/warm section,
and a need of 18.35 GiB at 262K cannot be DS4's if DS4 boots at max-model-len 1M with about
12 GiB of KV (the A/B boots below). The planner prints that conflict; it does not fit it."""

from __future__ import annotations

from typing import Any

_DS4 = "deepseek-v4-flash-eugr-agent"
_NODE = {"node_total_gib": 119.6,  # measured: ~119.6 GiB visible per GB10 node
         "weights_gib": 77.7}  # measured: weights per node at TP=2
_UMA = "field report, UMA gate (vLLM #48140)"
_UMA_BOOT = {
    "recipe": _DS4, "profile": "agent", **_NODE, "gmu": 0.78, "batched_tokens": 2048,
    # assumed: the agent profile at its 0.78; the paragraph gives neither
    "page_cache_booked": True, "outcome": "refused",
    "max_model_len": 262144,  # assumed: the refusing boots quote 262K's need
    "need_gib": 18.35,  # measured: "262K requires 18.35 GiB"
}

FIELD_OBSERVATIONS: list[dict[str, Any]] = [
    {"recipe": _DS4, "profile": "agent", **_NODE,
     "source": "field report: GMU 0.70 left 2.39 GiB of KV",
     "gmu": 0.70, "kv_gib": 2.39,  # measured: "at 0.70 the KV budget fell to 2.39 GiB"
     "batched_tokens": 2048,  # assumed: the agent profile's chunk; the report does not say
     "outcome": "refused", "max_model_len": 32768,  # measured: "insufficient for even 32K"
     "note": "the boot that showed GMU is a KV lever, not a safety lever"},
    {"recipe": _DS4, "profile": "agent", **_NODE,
     "source": "field report: agent-2048 at GMU 0.78",
     "gmu": 0.78, "pool_tokens": 2669829, "max_concurrency": 2.55,  # measured (A/B boot)
     "max_model_len": 1048576, "batched_tokens": 2048},
    {"recipe": _DS4, "profile": "batch", **_NODE,
     "source": "field report: batch-8192 at GMU 0.78",
     # measured (A/B boot). 1.59x is the report's; its own pool gives 1,598,763 / 1,048,576
     # = 1.52x. Kept as reported, and printed as not following from the pool.
     "gmu": 0.78, "pool_tokens": 1598763, "max_concurrency": 1.59,
     "max_model_len": 1048576, "batched_tokens": 8192},
    *({**_UMA_BOOT, "source": f"{_UMA}: boot {i} reported {kv} GiB for KV", "kv_gib": kv}
      for i, kv in enumerate((4.22, 5.18, 5.34), 1)),  # measured: the three boots
    {**_UMA_BOOT, "source": f"{_UMA}: 128K refuses", "max_model_len": 131072,
     "need_gib": None},  # measured: "128K-262K+ deterministically refuses"
    *({**_UMA_BOOT, "source": f"{_UMA}: {n // 1024}K boots", "max_model_len": n,
       "need_gib": None, "outcome": "booted"}  # measured: "32K-64K boots normally"
      for n in (32768, 65536)),
]
