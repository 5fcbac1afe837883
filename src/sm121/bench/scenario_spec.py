"""What one scenario is, as data: how it runs, its CLI parameters, what an A/B compares, its
report section and its plots. A new scenario is one module plus one `ScenarioSpec` entry in
`sm121.bench.scenarios`; the CLI commands and the report are built from the entries.

The entries name their code by reference ("module:attribute"), resolved when first used:
every `sm121` command builds the `bench` command table from the registry, and the scenario
modules import aiohttp, numpy and matplotlib, which a `--help` must not pay for. A reference
may also be the object itself (a scenario registered from a test or a plug-in)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

from sm121.errors import Sm121Error

Headline = tuple[tuple[str, str, str, str], ...]  # key, label, format, better
Samples = list[dict[str, Any]]
Data = dict[str, Any]  # a results file as loaded (sm121.bench.result_models.BenchResults)
# (results, plot files) -> Markdown lines; the plots are drawn first, by `plots`
Section = Callable[[Data, list[Path]], list[str]]
Plots = Callable[[Data, Path, str], list[Path]]  # (results, out dir, file stem) -> PNG files
Prepare = Callable[[dict[str, Any]], dict[str, Any]]  # CLI values -> scenario params
Ref = str | object  # "module:attribute", or the object itself


def resolve(ref: Ref) -> Any:
    """The object a reference names (imported on first use), or the reference itself."""
    if not isinstance(ref, str):
        return ref
    module_name, _, attribute = ref.partition(":")
    try:
        return getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as exc:
        raise Sm121Error(f"scenario registry: cannot load {ref!r}: {exc}",
                         "a registry entry names its code as 'package.module:attribute'"
                         ) from exc


@dataclass(frozen=True)
class Param:
    """One CLI parameter of a scenario command (`sm121 bench NAME --flag VALUE`).

    `name` is the key the value has in the params handed to `prepare` (or straight to the
    scenario); `parse` turns comma-separated text into a list of numbers."""

    name: str
    flag: str
    type: Any  # the annotation typer reads: int, float, str, int | None, ...
    default: Any
    help: str = ""
    short: str | None = None
    parse: Literal["", "ints", "floats"] = ""
    nonempty: str = ""  # when set, an empty list is refused with this example
    argument: bool = False  # a positional argument instead of an option

    def value(self, raw: Any) -> Any:
        if not self.parse:
            return raw
        cast_to = int if self.parse == "ints" else float
        values = [cast_to(x) for x in str(raw).split(",") if x.strip()]
        if self.nonempty and not values:
            raise Sm121Error(f"{self.flag} is empty", f"example: {self.flag} {self.nonempty}")
        return values


def _no_metrics(_: Samples) -> dict[str, Any]:
    return {}


@dataclass(frozen=True)
class ScenarioSpec:
    name: str
    run: Ref  # runner.Scenario: async (Context, params) -> summary
    help: str  # the command's help (its docstring)
    needs_stream: bool = True
    params: tuple[Param, ...] = ()
    api: str = "completions"  # the default of --api
    api_option: bool = True  # offer --api (a replay speaks what was captured)
    stream_option: bool = False  # offer --no-stream (counts from usage, no per-token timing)
    prepare: Ref | None = None  # Prepare: check and shape the CLI values before anything runs
    headline: Ref = ()  # Headline: the metrics an A/B compares, in table order
    flatten: Ref = _no_metrics  # (samples of one run) -> the headline metrics
    rep_stats: bool = False  # its summary holds the headline's stats over its repetitions
    # (A/B samples, profiles) -> which profile is best and why; None: the table says it all
    verdict: Ref | None = None
    recompute: Ref | None = None  # Data -> Data: metrics again from the raw samples
    rejudge: Ref | None = None  # (Data, slo) -> Data: `bench report --slo`
    plots: Ref | None = None  # Plots
    section: Ref | None = None  # Section; None: the headline table only
    console: Ref | None = None  # summary -> terminal lines; None: the headline table
    sample: Ref = "sm121.bench.result_models:Open"  # the model of one recorded sample
    summary: Ref = "sm121.bench.result_models:Open"  # the model of its run's summary
    extra: Mapping[str, Any] = field(default_factory=dict)  # for plug-ins, unused here

    def scenario(self) -> Any:
        return resolve(self.run)

    def headline_rows(self) -> Headline:
        return cast(Headline, resolve(self.headline))

    def flat(self, samples: Samples) -> dict[str, Any]:
        return cast(dict[str, Any], resolve(self.flatten)(samples))

    def verdict_fn(self) -> Callable[[Samples, list[str]], dict[str, Any]] | None:
        return None if self.verdict is None else resolve(self.verdict)

    def cli_params(self, values: dict[str, Any]) -> dict[str, Any]:
        """The scenario's params from its CLI values (checked before anything is sent)."""
        by_name = {p.name: p for p in self.params}
        params = {k: by_name[k].value(v) if k in by_name else v for k, v in values.items()}
        return resolve(self.prepare)(params) if self.prepare is not None else params
