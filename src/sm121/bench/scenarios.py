"""The scenario registry: one entry per scenario, carrying how it runs, its CLI parameters,
what an A/B compares, its report section and its plots (see `scenario_spec`). `sm121 bench
NAME`, `bench ab --scenario NAME` and `bench report` are built from these entries, so a new
scenario is its module plus one `register(ScenarioSpec(...))` here (or from a plug-in).

This module imports no scenario code: entries name it by reference, loaded when used."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sm121.bench import knee, overlap_metrics, scaling
from sm121.bench.agents import summary as agents_summary
from sm121.bench.agents.choose import verdict
from sm121.bench.agents.replay import replay
from sm121.bench.agents.scenario import agents
from sm121.bench.locality import locality
from sm121.bench.overlap import overlap
from sm121.bench.retrieval import retrieval

SCENARIOS: dict[str, ScenarioSpec] = {}


def register(spec: ScenarioSpec) -> ScenarioSpec:
    """Add a scenario (a plug-in or a test may too); its name is its command's name."""
    SCENARIOS[spec.name] = spec
    return spec


def get(name: str) -> ScenarioSpec:
    if name not in SCENARIOS:
        raise Sm121Error(f"unknown scenario {name!r}", f"one of: {', '.join(SCENARIOS)}")
    return SCENARIOS[name]


SCENARIOS: dict[str, ScenarioSpec] = {
    "overlap": ScenarioSpec(overlap, True, overlap_metrics.HEADLINE, _overlap_flat),
    "decode-scaling": ScenarioSpec(scaling.decode_scaling, False, scaling.DECODE_HEADLINE,
                                   scaling.flatten),
    "prefill-scaling": ScenarioSpec(scaling.prefill_scaling, False, scaling.PREFILL_HEADLINE,
                                    scaling.flatten),
    "knee": ScenarioSpec(knee.knee, True, knee.HEADLINE, knee.flatten),
    "locality": ScenarioSpec(locality, True, (), lambda _: {}),
    "retrieval": ScenarioSpec(retrieval, False, (), lambda _: {}),
    "agents": ScenarioSpec(agents, True, agents_summary.HEADLINE, agents_summary.flatten,
                           api="chat", verdict=verdict),
    "replay": ScenarioSpec(replay, True, agents_summary.HEADLINE, agents_summary.flatten,
                           api="chat"),
}
