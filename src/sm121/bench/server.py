"""What the server says about itself: served models, version, cache config and Prometheus
counters (read before and after a measurement, so deltas belong to it)."""

from __future__ import annotations

from typing import Any

from sm121.bench.client import BenchClient
from sm121.engines.client import EngineClient, cache_config, max_model_len
from sm121.engines.prometheus import parse_metrics

# Counters whose deltas a scenario records (absent ones are simply missing).
COUNTERS = (
    "vllm:prompt_tokens_total", "vllm:generation_tokens_total",
    "vllm:prefix_cache_hits_total", "vllm:prefix_cache_queries_total",
    "vllm:spec_decode_num_accepted_tokens_total", "vllm:spec_decode_num_draft_tokens_total",
    "vllm:spec_decode_num_drafts_total", "vllm:num_preemptions_total",
    "vllm:request_prefill_time_seconds_sum", "vllm:request_prefill_time_seconds_count",
    "vllm:request_queue_time_seconds_sum", "vllm:request_queue_time_seconds_count",
)


def counter_deltas(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {name: round(after[name] - before.get(name, 0.0), 6)
            for name in COUNTERS if name in after}


def spec_acceptance(deltas: dict[str, float]) -> float | None:
    """Accepted over drafted speculative tokens in the interval, when the server speculates."""
    drafted = deltas.get("vllm:spec_decode_num_draft_tokens_total")
    accepted = deltas.get("vllm:spec_decode_num_accepted_tokens_total")
    return accepted / drafted if drafted and accepted is not None else None


def prefix_reuse(deltas: dict[str, float]) -> float | None:
    queries = deltas.get("vllm:prefix_cache_queries_total")
    hits = deltas.get("vllm:prefix_cache_hits_total")
    return hits / queries if queries and hits is not None else None


def engine_of(client: BenchClient) -> EngineClient:
    return client.engine


async def read_counters(client: BenchClient) -> dict[str, float]:
    text = await engine_of(client).metrics_text()
    return parse_metrics(text) if text else {}


async def server_info(client: BenchClient) -> dict[str, Any]:
    """The server's config as far as it tells: /v1/models, /version, cache_config_info."""
    engine = engine_of(client)
    models = await engine.models()
    info: dict[str, Any] = {"url": client.base_url, "model": client.model, "models": models}
    info["version"] = await engine.version()
    metrics = await engine.metrics_text()
    if metrics:
        keep = ("block_size", "enable_prefix_caching", "kv_cache_size_tokens",
                "gpu_memory_utilization", "cache_dtype", "kv_cache_max_concurrency")
        info["cache_config"] = {k: v for k, v in cache_config(metrics).items() if k in keep}
    info["max_model_len"] = max_model_len(models, client.model)
    return info
