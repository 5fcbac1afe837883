"""The results files `sm121 bench` writes, as pydantic models: one scenario run (kind
"scenario"), an A/B across profiles ("ab") and a sweep over N ("sweep"), generic in the
scenario's sample model (each scenario's `Scenario.sample`, under `bench/scenarios/`).

The JSON on disk is the contract: every model keeps keys it does not know (`extra="allow"`:
a file from a newer sm121, a field a scenario adds) and dumps with `exclude_unset`, so a
file read and written back has the same keys. `results.ResultsFile` writes plain dicts (a
sample at a time, atomically); `scenarios.load_typed` reads a file into these models, by
the scenario's `Scenario.results_model`."""

from __future__ import annotations

from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, Field

from sm121.names import AbProfile
from sm121.open_model import Open
from sm121.recipes.schema import ArgValue

__all__ = ["Open"]  # with every model below: the results files' one base, re-exported

SCHEMA = "sm121.bench.results"
SCHEMA_VERSION = 1

Status = Literal["running", "complete", "interrupted", "failed"]
Number = float | int
Scalar = str | int | float | bool | None


class Stats(Open):
    """median, min, max and n over repetitions (`stats.summarize`)."""

    median: Number | None
    min: Number | None
    max: Number | None
    n: int


class ApiCheck(Open):
    ok: bool
    reason: str | None = None


class ProbeReport(Open):
    """`bench probe`: can streams be counted to the token?"""

    safe: bool
    reason: str | None = None
    requests: int | None = None
    token_ids: bool | None = None
    usage_matches: bool | None = None
    histogram: dict[str, int] | None = None
    tokens_per_chunk: Number | None = None
    cache_salt: bool | None = None
    apis: dict[str, ApiCheck] | None = None


class ServerInfo(Open):
    """What the server said about itself when the run began (`server.server_info`)."""

    url: str | None = None
    model: str | None = None
    models: Open | None = None  # /v1/models as the server answered
    version: str | None = None
    max_model_len: int | None = None
    cache_config: dict[str, Scalar] | None = None

    def get(self, key: str, default: Any = None) -> Any:
        """A field as the dict this was read: kept for the callers that read `ctx.server` so."""
        return getattr(self, key, default)


class MetricComparison(Open):
    profiles: dict[AbProfile, Stats]
    ratio_to_baseline: dict[str, Number | None]


class ProfileVerdict(Open):
    goodput: Number | None = None
    ttft_p95_s: Number | None = None
    terms: dict[str, Number | None] = Field(default_factory=dict)
    reps: int = 0


class Verdict(Open):
    """The agents A/B's choice (`agents.choose.verdict`)."""

    best: AbProfile | None
    why: str
    profiles: dict[AbProfile, ProfileVerdict] = Field(default_factory=dict)


class BootPair(Open):
    """A boot's first repetition and its k-th, of one metric."""

    profile: AbProfile
    boot: int
    k: int
    first: Number
    later: Number


class BootEffect(Open):
    """The later repetitions of every boot against its first, for one metric."""

    metric: str
    pairs: list[BootPair]
    n: int
    later_higher: int
    later_lower: int
    ties: int
    median_ratio: Number | None = None
    min_ratio: Number | None = None
    max_ratio: Number | None = None
    sign_test_p: Number
    verdict: str


class AbSummary(Open):
    """`compare.compare_with`: per headline metric and profile, stats and ratios."""

    baseline: AbProfile
    metrics: dict[str, MetricComparison]
    verdict: Verdict | None = None
    boot_effect: dict[str, BootEffect] | None = None  # per headline metric (`boot_effect`)


class AbParams(Open):
    recipe: str
    profiles: list[AbProfile]
    reps: int
    overrides: dict[str, ArgValue] = Field(default_factory=dict)
    scenario_params: Open = Field(default_factory=Open)  # the scenario's params, as given
    order: list[str] = Field(default_factory=list)


S = TypeVar("S")  # the scenario's sample model
U = TypeVar("U")  # the scenario's summary model
M = TypeVar("M", bound=BaseModel)  # the scenario's headline metrics (`Scenario.metrics`)


class Header(Open):
    """The fields every results file has, whatever its kind."""

    schema_: Literal["sm121.bench.results"] = Field(alias="schema")  # BaseModel has .schema
    schema_version: int = Field(ge=1, le=SCHEMA_VERSION)
    kind: Literal["scenario", "ab", "sweep"]
    scenario: str
    sm121_version: str
    created: str
    status: Status
    server: ServerInfo = Field(default_factory=ServerInfo)
    probe: ProbeReport | None = None
    error: str | None = None
    finished: str | None = None
    stream: bool | None = None  # set by the scenario runner
    api: str | None = None
    label: str | None = None


class Envelope(Header):
    """Any results file, its params and summary unread (checked when a file is loaded)."""

    params: Open = Field(default_factory=Open)
    samples: list[Any] = Field(default_factory=list)
    summary: Open = Field(default_factory=Open)


class ScenarioResults(Header, Generic[S, U]):
    """`sm121 bench NAME`: one run; samples as the scenario recorded them."""

    kind: Literal["scenario"]
    params: Open = Field(default_factory=Open)  # the scenario's params, as given
    samples: list[S] = Field(default_factory=list)
    summary: U


class AbEntry(Open, Generic[S, M]):
    """One (repetition, profile) of an A/B: the boot and the run on it."""

    profile: AbProfile
    rep: int
    # the scenario's `flatten`: its headline; `{}` when nothing was measured
    metrics: M = Field(default_factory=dict, validate_default=True)  # type: ignore[assignment]
    run_id: str | None = None
    engine_args: dict[str, ArgValue] = Field(default_factory=dict)
    boot: Open = Field(default_factory=Open)  # the boot-log facts (runs.state.BootFacts)
    timings: Open = Field(default_factory=Open)  # the launch's phases (runs.state.Timings)
    results_file: str | None = None
    server: ServerInfo = Field(default_factory=ServerInfo)
    probe: ProbeReport | None = None
    samples: list[S] = Field(default_factory=list)
    summary: Open = Field(default_factory=Open)  # the scenario's summary of this run
    error: str | None = None  # a boot or run that failed: recorded, and the A/B went on
    boot_index: int | None = None  # which boot measured it (several repetitions per boot)
    rep_on_boot: int | None = None  # 0: the boot's first repetition

    def measured(self) -> bool:
        """The run measured something: no error, and headline metrics (`{}`: none)."""
        return self.error is None and bool(self.metrics.model_dump(exclude_unset=True))


class AbBootName(Open):
    """Where an A/B's boot record (bench/boot.BootRecord, kept as it is) says which profile it
    booted: its name and the boot's place in the A/B's order."""

    name: AbProfile | None = None
    boot_index: int | None = None


class AbResults(Header, Generic[S, M]):
    """`sm121 bench ab`: every profile served and measured, in alternating order."""

    kind: Literal["ab"]
    params: AbParams
    samples: list[AbEntry[S, M]] = Field(default_factory=list)
    summary: AbSummary | Open = Field(default_factory=Open)  # empty before a sample
    boots: list[AbBootName] = Field(default_factory=list)

    def profiles(self) -> list[str]:
        """The profiles measured, in the A/B's order: a tune's A/B measures arms (variants)
        its `params.profiles` do not list, and each is a profile too."""
        return list(dict.fromkeys([*self.params.profiles, *(e.profile for e in self.samples)]))

    def verdict(self) -> Verdict | None:
        return self.summary.verdict if isinstance(self.summary, AbSummary) else None


class SweepEntry(Open, Generic[S, M]):
    agents: int
    results_file: str | None = None
    samples: list[S] = Field(default_factory=list)
    # the scenario's `flatten`: its headline; `{}` when nothing was measured
    metrics: M = Field(default_factory=dict, validate_default=True)  # type: ignore[assignment]
    error: str | None = None  # a run that failed: recorded, and the sweep went on

    def measured(self) -> bool:
        return self.error is None and bool(self.metrics.model_dump(exclude_unset=True))


class SweepPoint(Open):
    """One N of a sweep: its headline metrics beside it."""

    agents: int


class SweepSummary(Open):
    slo: str
    largest_n: int | None = None
    points: list[SweepPoint] = Field(default_factory=list)


class SweepResults(Header, Generic[S, M]):
    """`sm121 bench sweep`: the agents scenario at each N."""

    kind: Literal["sweep"]
    params: Open = Field(default_factory=Open)
    samples: list[SweepEntry[S, M]] = Field(default_factory=list)
    summary: SweepSummary | Open = Field(default_factory=Open)

    def held(self) -> dict[str, Any]:
        """The summary's keys as the file holds them (a summary of any age)."""
        return self.summary.to_json()
