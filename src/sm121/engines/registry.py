"""Which adapter serves which engine. The one place that names the engine packages: a second
engine adds its folder under engines/ and one entry here.

An adapter is found once, where a plan or a recipe first meets its engine, and carried from
there (an argument, a field); no reader looks it up again. Those places:
  plan/render.render_plan          a render: validation, trust, argv all take its adapter, and
                                   the ServePlan carries it (plan.model.rendered_with)
  plan/model.ServePlan             a plan read back from a run's plan.json, as it is built
  plan/validate, plan/trust        a caller holding only a recipe (tests; bench tune's
                                   trust_needs); render passes its own
  sizing/inputs.memory_request     `sm121 memory plan` and the other sizing callers without
                                   a plan (a plan's or the doctor's adapter is passed in)
  sizing/run_check.check_run       a run's kept plan (JSON, maybe from an older sm121)
  sizing/with_plan                 `plan --memory` of a multi-node recipe with no cluster
  doctor/run.run_doctor            once per doctor run, in every node's context
  launch/engine_flags              `sm121 engine flags` runs a recipe's engine
  launch/startup_history           an old start-up record rebuilt from its run's plan
  cli/cluster, cli/startup         `cluster check --recipe` and a log file given by path
Two more are in bench/ (scenarios/knee/on_recipe, tune/knobs): a recipe meeting its engine's
scheduler knobs."""

from __future__ import annotations

from dataclasses import fields

from sm121.engines.adapter import EngineAdapter, MetricNames
from sm121.engines.llamacpp.adapter import LlamacppAdapter
from sm121.engines.vllm.adapter import VllmAdapter
from sm121.errors import Sm121Error
from sm121.recipes.schema import EngineKind, EngineSpec

_ADAPTERS: dict[EngineKind, EngineAdapter] = {
    EngineKind.VLLM: VllmAdapter(),
    EngineKind.LLAMA_CPP: LlamacppAdapter(),
}


def adapter_for(kind: EngineKind) -> EngineAdapter:
    adapter = _ADAPTERS.get(kind)
    if adapter is None:
        raise Sm121Error(f"engine {kind.value} has no adapter yet",
                         f"engines sm121 renders today: {', '.join(k.value for k in _ADAPTERS)}")
    return adapter


def adapter_of(engine: str | None = None) -> EngineAdapter:
    """The adapter of a plan's or run's `engine` field (ServePlan.engine). None: the engine a
    recipe gets when it names none (schema's EngineSpec default), for a log read where no
    plan is at hand."""
    return adapter_for(EngineSpec().kind if engine is None else EngineKind(engine))


def has_adapter(kind: EngineKind) -> bool:
    return kind in _ADAPTERS


def adapters() -> tuple[EngineAdapter, ...]:
    """Every registered adapter, for a reader that does not know which engine answers (a
    /metrics scrape of a URL): it tries each adapter's names."""
    return tuple(_ADAPTERS.values())


def adapter_serving(owned_by: object) -> EngineAdapter | None:
    """The adapter of the engine whose /v1/models card names `owned_by` as its owner; None
    for another server (or a card that names none), which a reader then takes as it comes."""
    return next((a for a in adapters() if a.owned_by == owned_by), None)


def metric_names() -> MetricNames:
    """Every registered engine's names, engine by engine, for a reader of a /metrics page
    that does not know which engine serves it. With one engine, that engine's table."""
    tables = [adapter.metrics for adapter in adapters()]
    return MetricNames(**{f.name: tuple(name for table in tables for name in getattr(table, f.name))
                          for f in fields(MetricNames)})
