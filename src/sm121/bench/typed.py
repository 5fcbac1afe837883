"""A results file read into its models (`result_models`), with the samples and summary typed
by the scenario's registry entry. A scenario not registered here (a plug-in's file, `bench
probe`'s) reads with open records: every key kept, none checked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sm121.bench.result_models import AbResults, Envelope, Open, ScenarioResults, SweepResults
from sm121.bench.results import load_results
from sm121.bench.scenario_spec import resolve
from sm121.bench.scenarios import SCENARIOS

BenchResults = ScenarioResults[Any, Any] | AbResults[Any] | SweepResults[Any]


def parse_results(data: dict[str, Any]) -> BenchResults:
    """Raises pydantic's ValidationError naming the field when the file does not fit."""
    spec = SCENARIOS.get(str(data.get("scenario")))
    sample = resolve(spec.sample) if spec else Open
    kind = Envelope.model_validate(data).kind
    if kind == "ab":
        return AbResults[sample].model_validate(data)  # type: ignore[valid-type]
    if kind == "sweep":
        return SweepResults[sample].model_validate(data)  # type: ignore[valid-type]
    summary = resolve(spec.summary) if spec else Open
    return ScenarioResults[sample, summary].model_validate(data)  # type: ignore[valid-type]


def load_typed(path: Path) -> BenchResults:
    return parse_results(load_results(path))
