"""Boot results measured in the field, shipped as built-in calibration.

Source: dgx-spark-agent-serving-benchmarks v0.1.1 (2026-08), DeepSeek-V4-Flash DSpark,
TP=2 on 2x GB10. Each value is a measurement unless its comment says otherwise."""

from __future__ import annotations

from typing import Any

_DS4 = "deepseek-v4-flash-eugr-agent"
_NODE = {"node_total_gib": 119.6,  # measured: ~119.6 GiB visible per GB10 node
         "weights_gib": 77.7}  # measured: weights per node at TP=2

FIELD_OBSERVATIONS: list[dict[str, Any]] = [
    {"recipe": _DS4, "profile": "agent", **_NODE,
     "source": "field report: GMU 0.70 left 2.39 GiB of KV",
     "gmu": 0.70, "kv_gib": 2.39,  # measured: "at 0.70 the KV budget fell to 2.39 GiB"
     "batched_tokens": 2048,  # assumed: the agent profile's chunk; the report does not say
     "note": "the boot that showed GMU is a KV lever, not a safety lever"},
    {"recipe": _DS4, "profile": "agent", **_NODE,
     "source": "field report: agent-2048 at GMU 0.78",
     "gmu": 0.78, "pool_tokens": 2669829, "max_concurrency": 2.55,  # measured (A/B boot)
     "max_model_len": 1048576, "batched_tokens": 2048},
    {"recipe": _DS4, "profile": "batch", **_NODE,
     "source": "field report: batch-8192 at GMU 0.78",
     "gmu": 0.78, "pool_tokens": 1598763, "max_concurrency": 1.59,  # measured (A/B boot)
     "max_model_len": 1048576, "batched_tokens": 8192},
]
