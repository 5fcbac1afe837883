"""An arm's capacity predicted before its search (issue 44): from its boot's own KV pool, its
scheduler settings and the tune's workload, the agents it should hold (memory/capacity.py),
so its search tests about 0.9x and 1.1x of that first and bisects only where the measurement
disagrees."""

from __future__ import annotations

from collections.abc import Sequence

from sm121.bench.result_models import AbEntry
from sm121.bench.scenarios.agents.capacity import knobs_from_args, load_shape, slo_ttft
from sm121.bench.tune.request import TuneRequest
from sm121.engines.client import block_size_of, kv_pool_of
from sm121.engines.registry import adapter_for
from sm121.memory.capacity import Capacity, Pool, predict
from sm121.recipes.loader import load_recipe


def arm_prediction(request: TuneRequest, entry: AbEntry) -> Capacity | None:
    """The prediction for the arm `entry` measured (its boot's pool, its engine args); None
    when its boot logged no pool or the server no context length."""
    labels = entry.server.cache_config or {}
    block = block_size_of(labels) or 16
    logged = getattr(entry.boot, "kv_pool_tokens", None)
    found = kv_pool_of(labels)
    tokens = int(logged) if isinstance(logged, int) else found[0] * found[1] if found else None
    max_len = entry.server.max_model_len
    if not tokens or not max_len:
        return None
    engine = adapter_for(load_recipe(request.recipe).recipe.engine.kind)  # the arm's engine
    knobs = knobs_from_args(entry.engine_args, engine.scheduler, engine.memory.kv_cache_dtype)
    shape = load_shape(request.workload, request.turns or 6, int(max_len))
    return predict(Pool(tokens, block, "the arm's boot"), shape, knobs,
                   slo_ttft_s=slo_ttft(request.slo), agents=request.agents)


def predicted_for(request: TuneRequest, entries: Sequence[AbEntry], arm: str
                  ) -> Capacity | None:
    """The prediction for arm `arm` from its first measured run (None: not known)."""
    first = next((e for e in entries if e.profile == arm and not e.error), None)
    return None if first is None else arm_prediction(request, first)
