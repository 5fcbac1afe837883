"""What a scenario runs in and against: the `Target` (a served endpoint) and the `Context`
its `run` gets (client, results file, server, clock origin, progress). Its own module so the
contract (`scenario.Scenario`) and the runner that drives it (`runner.run_scenario`) both
read it without importing each other."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from sm121.bench.client import BenchClient
from sm121.bench.result_models import ServerInfo
from sm121.bench.results import ResultsFile
from sm121.progress import Progress, quiet


@dataclass(frozen=True)
class Target:
    """The endpoint a scenario measures and how it is spoken to."""

    url: str
    model: str | None = None
    stream: bool = True
    api_key: str | None = None
    api: str = "completions"


@dataclass
class Context:
    """What a scenario gets: the client, its results file, a clock origin and progress."""

    client: BenchClient
    results: ResultsFile
    server: ServerInfo
    progress: Progress = quiet
    t0: float = field(default_factory=time.monotonic)

    def add(self, sample: dict[str, Any] | BaseModel) -> None:
        """Record a sample now (a model is written as its JSON)."""
        self.results.add_sample(sample.model_dump(mode="json") if isinstance(sample, BaseModel)
                                else sample)
