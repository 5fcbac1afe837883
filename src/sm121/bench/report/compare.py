"""The A/B comparison: per headline metric and profile, median, min, max and n over the
repetitions, and each median's ratio to the first profile's (the baseline); with
repetitions per boot, the test of a boot's later repetitions against its first. It takes the
scenario object, not its name, so that report sections can recompute a comparison without
reaching back up into the scenario table."""

from __future__ import annotations

from typing import Any

from sm121.bench.boot_effect import boot_effects
from sm121.bench.result_models import AbEntry, AbSummary, MetricComparison, Stats, Verdict
from sm121.bench.scenario import Scenario
from sm121.bench.stats import summarize


def compare_with(spec: Scenario[Any, Any], samples: list[dict[str, Any]], profiles: list[str]
                 ) -> dict[str, Any]:
    """The comparison of an A/B's entries (as its file holds them), as its summary's JSON."""
    metrics = {}
    for key, *_ in spec.headline_rows():
        row = {p: Stats.model_validate(summarize(
            [s["metrics"].get(key) for s in samples if s["profile"] == p])) for p in profiles}
        base = row[profiles[0]].median
        metrics[key] = MetricComparison(
            profiles=row, ratio_to_baseline={p: _ratio(row[p].median, base) for p in profiles})
    summary = AbSummary(baseline=profiles[0], metrics=metrics)
    verdict = spec.verdict_fn()
    if verdict is not None:
        chosen = verdict(samples, profiles)
        summary.verdict = None if chosen is None else Verdict.model_validate(chosen)
    table = summary.to_json()
    if any(s.get("rep_on_boot") for s in samples):
        entries = [AbEntry[Any].model_validate(s) for s in samples]
        effects = boot_effects(entries, [k for k, *_ in spec.headline_rows()])
        table["boot_effect"] = {m: e.to_json() for m, e in effects.items()}
    return table


def _ratio(value: float | int | None, base: float | int | None) -> float | None:
    return value / base if value is not None and base else None
