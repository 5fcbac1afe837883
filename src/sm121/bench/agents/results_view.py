"""An agents A/B's or sweep's results file as its report reads it, typed: the A/B's profiles,
entries and verdict; the sweep's entries, SLO and largest N. Read from the file's data (the
JSON edge) once, after `recompute` refreshed its metrics."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from sm121.bench.agents.choose import Verdict
from sm121.bench.agents.entries import AbEntry, SweepEntry


class AbResults(BaseModel):
    profiles: list[str]
    entries: list[AbEntry]
    verdict: Verdict | None  # None: the file has none (a scenario without a verdict hook)


class SweepResults(BaseModel):
    entries: list[SweepEntry]
    slo: str | None
    largest_n: int | None
    has_largest_n: bool  # a file written before the sweep judged its N has no such key


def read_ab(data: dict[str, Any]) -> AbResults:
    verdict = (data.get("summary") or {}).get("verdict")
    entries = [AbEntry.model_validate(e) for e in data["samples"]]
    return AbResults(profiles=list(data["params"]["profiles"]), entries=entries,
                     verdict=Verdict.model_validate(verdict) if verdict else None)


def read_sweep(data: dict[str, Any]) -> SweepResults:
    summary = data.get("summary") or {}
    entries = [SweepEntry.model_validate(e) for e in data["samples"]]
    return SweepResults(entries=entries, slo=summary.get("slo"),
                        largest_n=summary.get("largest_n"),
                        has_largest_n="largest_n" in summary)
