"""The scenario registry: how each scenario runs, whether it needs streamed timing, which
metrics an A/B compares, and how one run's samples flatten into those metrics."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sm121.bench import overlap_metrics, scaling
from sm121.bench.agents import summary as agents_summary
from sm121.bench.agents.choose import verdict
from sm121.bench.agents.replay import replay
from sm121.bench.agents.scenario import agents
from sm121.bench.locality import locality
from sm121.bench.overlap import overlap
from sm121.bench.retrieval import retrieval

Headline = tuple[tuple[str, str, str, str], ...]  # key, label, format, better


@dataclass(frozen=True)
class ScenarioSpec:
    run: Any  # runner.Scenario
    needs_stream: bool
    headline: Headline
    flatten: Callable[[list[dict[str, Any]]], dict[str, Any]]
    api: str = "completions"  # the default of --api
    # (A/B samples, profiles) -> which profile is best and why; None: the table says it all
    verdict: Callable[[list[dict[str, Any]], list[str]], dict[str, Any]] | None = None


def _overlap_flat(samples: list[dict[str, Any]]) -> dict[str, Any]:
    """One boot runs one overlap repetition: its metrics, when valid."""
    valid = [s["metrics"] for s in samples if s["metrics"].get("valid")]
    return {k: valid[-1].get(k) for k, *_ in overlap_metrics.HEADLINE} if valid else {}


SCENARIOS: dict[str, ScenarioSpec] = {
    "overlap": ScenarioSpec(overlap, True, overlap_metrics.HEADLINE, _overlap_flat),
    "decode-scaling": ScenarioSpec(scaling.decode_scaling, False, scaling.DECODE_HEADLINE,
                                   scaling.flatten),
    "prefill-scaling": ScenarioSpec(scaling.prefill_scaling, False, scaling.PREFILL_HEADLINE,
                                    scaling.flatten),
    "locality": ScenarioSpec(locality, True, (), lambda _: {}),
    "retrieval": ScenarioSpec(retrieval, False, (), lambda _: {}),
    "agents": ScenarioSpec(agents, True, agents_summary.HEADLINE, agents_summary.flatten,
                           api="chat", verdict=verdict),
    "replay": ScenarioSpec(replay, True, agents_summary.HEADLINE, agents_summary.flatten,
                           api="chat"),
}
