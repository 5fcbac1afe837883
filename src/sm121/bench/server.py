"""What the server says about itself: served models, version, cache config and Prometheus
counters (read before and after a measurement, so deltas belong to it)."""

from __future__ import annotations

from collections.abc import Mapping

from sm121.bench.client import BenchClient
from sm121.bench.result_models import ServerInfo
from sm121.engines.client import EngineClient, cache_config, max_model_len
from sm121.engines.prometheus import parse_metrics
from sm121.engines.registry import metric_names

_NAMES = metric_names()
# Counters whose deltas a scenario records (absent ones are simply missing), as exported.
COUNTERS = _NAMES.bench_counters


def counter_deltas(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {name: round(after[name] - before.get(name, 0.0), 6)
            for name in COUNTERS if name in after}


def spec_acceptance(deltas: dict[str, float]) -> float | None:
    """Accepted over drafted speculative tokens in the interval, when the server speculates."""
    drafted = _first(deltas, _NAMES.spec_draft)
    accepted = _first(deltas, _NAMES.spec_accepted)
    return accepted / drafted if drafted and accepted is not None else None


def preemptions(deltas: Mapping[str, float]) -> float | None:
    """Preemptions over the run, by the engine's name for them."""
    return _first(deltas, _NAMES.preemptions)


def prefix_counts(deltas: Mapping[str, float]) -> tuple[float | None, float | None]:
    """(hits, queries) of the prefix cache over the run, in tokens."""
    return _first(deltas, _NAMES.prefix_hits), _NAMES.queries_in(deltas)


def prefix_reuse(deltas: dict[str, float]) -> float | None:
    queries = _NAMES.queries_in(deltas)
    hits = _first(deltas, _NAMES.prefix_hits)
    return hits / queries if queries and hits is not None else None


def _first(deltas: Mapping[str, float], names: tuple[str, ...]) -> float | None:
    """The value of the first of an engine's names for one thing that was recorded."""
    return next((deltas[name] for name in names if name in deltas), None)


def engine_of(client: BenchClient) -> EngineClient:
    return client.engine


async def read_counters(client: BenchClient, engine: EngineClient | None = None
                        ) -> dict[str, float]:
    """The counters of the client's endpoint, or of `engine` (the engine behind a gateway)."""
    text = await (engine or engine_of(client)).metrics_text()
    return parse_metrics(text) if text else {}


async def server_info(client: BenchClient) -> ServerInfo:
    """The server's config as far as it tells: /v1/models, /version, cache_config_info."""
    engine = engine_of(client)
    models = await engine.models()
    info = ServerInfo.model_validate({"url": client.base_url, "model": client.model,
                                      "models": models})
    info.version = await engine.version()
    metrics = await engine.metrics_text()
    if metrics:
        keep = ("block_size", "num_gpu_blocks", "enable_prefix_caching", "kv_cache_size_tokens",
                "gpu_memory_utilization", "cache_dtype", "kv_cache_max_concurrency")
        info.cache_config = {k: v for k, v in cache_config(metrics).items() if k in keep}
    info.max_model_len = max_model_len(models, client.model)
    return info
