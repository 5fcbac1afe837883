"""An agents A/B's or sweep's results file as its report reads it, typed: the A/B's profiles,
entries and verdict; the sweep's entries, SLO and largest N. Read from the file's
results models once, after `recompute` refreshed its metrics."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from sm121.bench import result_models
from sm121.bench.scenarios.agents.choose import Verdict
from sm121.bench.scenarios.agents.entries import AbEntry, SweepEntry


class AbResults(BaseModel):
    profiles: list[str]
    entries: list[AbEntry]
    verdict: Verdict | None  # None: the file has none (a scenario without a verdict hook)


class SweepResults(BaseModel):
    entries: list[SweepEntry]
    slo: str | None
    largest_n: int | None
    has_largest_n: bool  # a file written before the sweep judged its N has no such key


def read_ab(results: result_models.AbResults[Any]) -> AbResults:
    summary = results.summary
    verdict = summary.verdict if isinstance(summary, result_models.AbSummary) else None
    # The agents code reads its entries in its own models (`agents.entries`).
    entries = [AbEntry.model_validate(e.to_json()) for e in results.samples]
    # A tune's A/B measures arms (variants) its `profiles` do not list: each is a profile too.
    profiles = list(dict.fromkeys([*results.params.profiles, *(e.profile for e in entries)]))
    return AbResults(profiles=profiles, entries=entries,
                     verdict=Verdict.model_validate(verdict.to_json()) if verdict else None)


def read_sweep(results: result_models.SweepResults[Any]) -> SweepResults:
    held = results.summary.to_json()  # a summary of any age: what keys it has
    entries = [SweepEntry.model_validate(e.to_json()) for e in results.samples]
    return SweepResults(entries=entries, slo=held.get("slo"), largest_n=held.get("largest_n"),
                        has_largest_n="largest_n" in held)
