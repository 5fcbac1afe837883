"""`sm121 bench NAME` for every registered scenario, built from its registry entry: the
common options (--url, --model, --out, --json, --api, --no-stream where it applies) and the
scenario's own `Param`s. Registering a scenario is what makes its command."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import typer
from typer.models import CommandInfo

from sm121.bench.scenario_spec import Param, ScenarioSpec
from sm121.bench.scenarios import SCENARIOS
from sm121.cli.bench_common import API, AS_JSON, MODEL, NO_STREAM, OUT, URL, run_cli_scenario

_COMMON = ("url", "model", "out", "no_stream", "as_json", "api")


def _parameter(name: str, annotation: Any, default: Any) -> inspect.Parameter:
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default,
                             annotation=annotation)


def _typer_default(param: Param) -> Any:
    if param.argument:
        return typer.Argument(param.default, help=param.help)
    flags = [param.flag, *([param.short] if param.short else [])]
    return typer.Option(param.default, *flags, help=param.help or None)


def _signature(spec: ScenarioSpec) -> list[inspect.Parameter]:
    own = [_parameter(p.name, p.type, _typer_default(p)) for p in spec.params]
    clash = {p.name for p in spec.params} & set(_COMMON)
    if clash:
        raise ValueError(f"scenario {spec.name}: parameter names {sorted(clash)} are taken "
                         "by the common options")
    arguments = [p for p, s in zip(own, spec.params, strict=True) if s.argument]
    options = [p for p, s in zip(own, spec.params, strict=True) if not s.argument]
    return [*arguments, _parameter("url", str, URL), _parameter("model", str | None, MODEL),
            _parameter("out", Path | None, OUT), *options,
            *([_parameter("no_stream", bool, NO_STREAM)] if spec.stream_option else []),
            _parameter("as_json", bool, AS_JSON),
            *([_parameter("api", str | None, API)] if spec.api_option else [])]


def scenario_command(spec: ScenarioSpec) -> CommandInfo:
    """The typer command of one scenario (typer reads the signature built here)."""
    def command(**values: Any) -> None:
        common = {k: values.pop(k, None) for k in _COMMON}
        run_cli_scenario(spec.name, common["url"], common["model"], common["out"],
                         bool(common["no_stream"]), spec.cli_params(values),
                         bool(common["as_json"]), common["api"])

    parameters = _signature(spec)
    command.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in parameters} | {"return": None}
    command.__doc__ = spec.help
    command.__name__ = spec.name.replace("-", "_")
    return CommandInfo(name=spec.name, callback=command)


def scenario_commands() -> list[CommandInfo]:
    return [scenario_command(spec) for spec in SCENARIOS.values()]
