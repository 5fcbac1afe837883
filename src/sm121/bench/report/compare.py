"""The A/B comparison: per headline metric and profile, median, min, max and n over the
repetitions, and each median's ratio to the first profile's (the baseline); with
repetitions per boot, the test of a boot's later repetitions against its first. It takes the
scenario object, not its name, so that report sections can recompute a comparison without
reaching back up into the scenario table."""

from __future__ import annotations

from typing import Any

from sm121.bench.boot_effect import boot_effects
from sm121.bench.result_models import AbEntry, AbSummary, MetricComparison, Stats
from sm121.bench.scenario import Scenario
from sm121.bench.stats import summarize


def compare_with(spec: Scenario[Any, Any], entries: list[AbEntry[Any, Any]],
                 profiles: list[str]) -> AbSummary:
    """The comparison of an A/B's measured entries; `to_json()` is its summary as the file
    keeps it (`boot_effect` an extra key, there only with repetitions per boot)."""
    metrics = {}
    for key, *_ in spec.headline:
        row = {p: Stats.model_validate(summarize(
            [getattr(e.metrics, key, None) for e in entries if e.profile == p]))
            for p in profiles}
        base = row[profiles[0]].median
        metrics[key] = MetricComparison(
            profiles=row, ratio_to_baseline={p: _ratio(row[p].median, base) for p in profiles})
    summary = AbSummary(baseline=profiles[0], metrics=metrics)
    if type(spec).verdict is not Scenario.verdict:  # a scenario without one writes no key
        summary.verdict = spec.verdict(entries, profiles)
    if any(e.rep_on_boot for e in entries):
        summary.boot_effect = boot_effects(entries, [k for k, *_ in spec.headline])
    return summary


def _ratio(value: float | int | None, base: float | int | None) -> float | None:
    return value / base if value is not None and base else None
