"""What one scenario is: a class implementing `Scenario[Sample, Summary]`. It carries its
typed parameters (a pydantic model; `cli/bench_scenarios` builds the command's options from
its fields), the models of the samples it records and of its summary, how it runs, what an
A/B compares (headline, flatten, verdict), how its metrics are recomputed from the raw
samples, and its report section and plots.

A scenario is one package under `bench/scenarios/` plus one line in the table
(`bench/scenarios/__init__.py`); its module is imported only when the scenario is used.

The results file stays JSON: the runner writes the summary with `.model_dump()` and a report
reads a file once into its models (`read`: `results_model(kind).model_validate`) and hands
the hooks those (`Results`); `recompute` sets its metrics on them. Every model keeps keys it
does not name (`result_models.Open`), so files written before a field existed still read."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Literal, TypeVar, cast

from pydantic import BaseModel, Field, JsonValue, TypeAdapter

from sm121.bench.result_models import (
    AbEntry,
    AbResults,
    Envelope,
    Open,
    ScenarioResults,
    SweepResults,
    Verdict,
)

if TYPE_CHECKING:
    from sm121.bench.context import Context

Headline = tuple[tuple[str, str, str, str], ...]  # key, label, format, better
# A results file read into its models (`Scenario.read`): the hooks narrow it by its class.
Results = ScenarioResults[Any, Any] | AbResults[Any, Any] | SweepResults[Any, Any]
Kind = Literal["scenario", "ab", "sweep"]
SampleT = TypeVar("SampleT")
SummaryT = TypeVar("SummaryT", bound=BaseModel)


def option(default: Any, flag: str, help: str = "", *, short: str | None = None,
           argument: bool = False, nonempty: str = "") -> Any:
    """A params field and its command-line form: `flag` (and `short`) or, with `argument`,
    a positional argument. A list field is given as comma-separated text on the command
    line; `nonempty` refuses an empty list with this example."""
    return Field(default, description=help, json_schema_extra={
        "flag": flag, "short": short, "argument": argument, "nonempty": nonempty})


class Params(Open):
    """A scenario's parameters. Keys it does not name are kept: `bench ab --param k=v`
    reaches the scenario as given. Only the keys set are handed on (`exclude_unset`), so a
    scenario's own defaults apply where nobody chose a value."""

    def given(self) -> dict[str, Any]:  # the JSON a settings model validates
        return self.model_dump(exclude_unset=True)


class Scenario(Generic[SampleT, SummaryT]):
    """The contract. Subclasses set the class attributes and override `run`; every other
    method has the default a simple scenario wants."""

    name: ClassVar[str]
    help: ClassVar[str]  # its command's help
    params: ClassVar[type[Params]] = Params
    sample: ClassVar[Any] = Open  # the model (or annotated union) of one recorded sample
    summary: ClassVar[type[BaseModel]] = Open
    metrics: ClassVar[type[BaseModel]] = Open  # `flatten`'s model: an A/B or sweep entry's
    api: ClassVar[str] = "completions"  # the default of --api
    api_option: ClassVar[bool] = True  # offer --api (a replay speaks what was captured)
    stream_option: ClassVar[bool] = False  # offer --no-stream (counts from usage)
    needs_stream: ClassVar[bool] = True
    headline: ClassVar[Headline] = ()  # the metrics an A/B compares, in table order
    rep_stats: ClassVar[bool] = False  # its summary holds the headline's stats over reps

    async def run(self, ctx: Context, params: Params) -> SummaryT:
        raise NotImplementedError

    def prepare(self, values: Params) -> BaseModel:
        """Command-line values -> the params the run gets (dumped as the run's params),
        checked before anything is sent."""
        return values

    def read_samples(self, samples: list[JsonValue]) -> list[SampleT]:
        """A run's samples as its results file holds them (JSON), in the sample model."""
        adapter: TypeAdapter[list[SampleT]] = TypeAdapter(list[self.sample])  # type: ignore[name-defined]
        return adapter.validate_python(samples)

    def flatten(self, samples: list[SampleT]) -> BaseModel | None:
        """The samples of one run -> its headline metrics (one A/B entry's `metrics`, read by
        the `headline` keys); None: nothing valid was measured (the entry keeps `{}`)."""
        return None

    def verdict(self, entries: list[AbEntry[SampleT, Any]], profiles: list[str]
                ) -> Verdict | None:
        """Which profile of an A/B is best and why; None: the table says it all."""
        return None

    def recompute(self, results: Results) -> Results:
        """The metrics again from the raw samples, with this sm121's metric functions (set
        on the models: whoever writes the file dumps them)."""
        return results

    def rejudge(self, results: Results, slo: str) -> None:
        """`bench report --slo`: judge the run against another SLO (agent scenarios)."""

    def plots(self, results: Results, out: Path, stem: str) -> list[Path]:
        return []

    def section(self, results: Results, files: list[Path]) -> list[str] | None:
        """Its report section (the plots drawn first); None: the headline table only."""
        return None

    def across(self, runs: list[Results]) -> list[str]:
        """A report's section over all its files of this scenario, after their own (the
        agents: timestamp-first against coding-agent, turn by turn); none by default."""
        return []

    def console(self, summary: SummaryT) -> list[str]:
        """Terminal lines for a run's summary; none: the headline table."""
        return []

    def results_model(self, kind: Kind) -> type[Results]:
        """The model a results file of this scenario reads into, by its kind."""
        if kind == "ab":
            return AbResults[self.sample, self.metrics]  # type: ignore[name-defined]
        if kind == "sweep":
            return SweepResults[self.sample, self.metrics]  # type: ignore[name-defined]
        return ScenarioResults[self.sample, self.summary]  # type: ignore[name-defined]

    def ab_entry(self, data: dict[str, Any] | BaseModel) -> AbEntry[SampleT, Any]:
        """One A/B entry (as written, or in another entry model) in this scenario's models."""
        if isinstance(data, BaseModel):
            data = data.model_dump(mode="json", exclude_unset=True, by_alias=True)
        model = AbEntry[self.sample, self.metrics]  # type: ignore[name-defined]
        return cast("AbEntry[SampleT, Any]", model.model_validate(data))

    def read_run(self, data: dict[str, Any]) -> ScenarioResults[SampleT, SummaryT]:
        """One run's results file (kind "scenario") in this scenario's models."""
        model = ScenarioResults[self.sample, self.summary]  # type: ignore[name-defined]
        return cast("ScenarioResults[SampleT, SummaryT]", model.model_validate(data))

    def read(self, data: dict[str, Any]) -> Results:
        """A results file as loaded (JSON, the edge) in this scenario's models; raises
        pydantic's ValidationError naming the field when it does not fit."""
        return self.results_model(Envelope.model_validate(data).kind).model_validate(data)

    def headline_metrics(self, samples: list[SampleT]) -> Open:
        """`flatten` as an A/B entry keeps it (`metrics`: read by the headline keys)."""
        metrics = self.flatten(samples)
        return Open() if metrics is None else Open.model_validate(metrics.model_dump(mode="json"))


class Unknown(Scenario[Open, Open]):
    """A file of a scenario the table does not hold (a plug-in's): open records."""

    name = "unknown"
    help = "A scenario this sm121 does not know."
