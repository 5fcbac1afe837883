"""`sm121 bench NAME` for every scenario in the table, built from its `Scenario` class: the
common options (--url, --model, --out, --json, --api, --no-stream where it applies) and one
option per field of its params model. A table line is what makes the command.

The bench group lists the table's names and summaries without importing a scenario; a
command is built (and its scenario module imported) only when it is invoked or its --help
read (`ScenarioGroup`)."""

from __future__ import annotations

import inspect
from collections.abc import Iterator, MutableMapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, get_args, get_origin

import typer
from pydantic.fields import FieldInfo
from typer.core import TyperCommand, TyperGroup

from sm121.bench import scenarios
from sm121.bench.scenario import Params, Scenario
from sm121.cli.bench_common import API, AS_JSON, MODEL, NO_STREAM, OUT, URL, run_cli_scenario
from sm121.errors import Sm121Error

if TYPE_CHECKING:
    # typer vendors click: its own Context and Command are the types TyperGroup declares.
    from typer._click import Command, Context

_COMMON = ("url", "model", "out", "no_stream", "as_json", "api")


def _parameter(name: str, annotation: Any, default: Any) -> inspect.Parameter:
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default,
                             annotation=annotation)


def _extra(field: FieldInfo) -> dict[str, Any]:
    extra = field.json_schema_extra
    return extra if isinstance(extra, dict) else {}


def _list_of(field: FieldInfo) -> type | None:
    """The item type of a list field (given as comma-separated text), or None."""
    if get_origin(field.annotation) is list:
        return get_args(field.annotation)[0]  # type: ignore[no-any-return]
    return None


def _typer_default(name: str, field: FieldInfo) -> tuple[Any, Any]:
    """(annotation, typer default) of one params field."""
    extra = _extra(field)
    default = ... if field.is_required() else field.default
    annotation = field.annotation
    if _list_of(field) is not None:
        annotation, default = str, ",".join(str(v) for v in field.default)
    if extra.get("argument"):
        return annotation, typer.Argument(default, help=field.description or "")
    flags = [extra.get("flag") or f"--{name.replace('_', '-')}",
             *([extra["short"]] if extra.get("short") else [])]
    return annotation, typer.Option(default, *flags, help=field.description or None)


def _value(name: str, field: FieldInfo, raw: Any) -> Any:
    item = _list_of(field)
    if item is None:
        return raw
    values = [item(x) for x in str(raw).split(",") if x.strip()]
    example = _extra(field).get("nonempty")
    if example and not values:
        flag = _extra(field).get("flag") or f"--{name}"
        raise Sm121Error(f"{flag} is empty", f"example: {flag} {example}")
    return values


def cli_values(params: type[Params], values: dict[str, Any]) -> Params:
    """The params model from a command's values (lists parsed, checked)."""
    fields = params.model_fields
    return params.model_validate({k: _value(k, fields[k], v) for k, v in values.items()})


def _signature(name: str, scenario: Scenario[Any, Any]) -> list[inspect.Parameter]:
    fields = scenario.params.model_fields
    clash = set(fields) & set(_COMMON)
    if clash:
        raise ValueError(f"scenario {name}: parameter names {sorted(clash)} are taken "
                         "by the common options")
    own = [(_parameter(k, *_typer_default(k, f)), bool(_extra(f).get("argument")))
           for k, f in fields.items()]
    return [*[p for p, argument in own if argument], _parameter("url", str, URL),
            _parameter("model", str | None, MODEL), _parameter("out", Path | None, OUT),
            *[p for p, argument in own if not argument],
            *([_parameter("no_stream", bool, NO_STREAM)] if scenario.stream_option else []),
            _parameter("as_json", bool, AS_JSON),
            *([_parameter("api", str | None, API)] if scenario.api_option else [])]


def scenario_command(name: str) -> Command:
    """The click command of one scenario (typer reads the signature built here)."""
    scenario = scenarios.get(name)

    def command(**values: Any) -> None:
        common = {k: values.pop(k, None) for k in _COMMON}
        params = scenario.prepare(cli_values(scenario.params, values)).model_dump()
        run_cli_scenario(name, common["url"], common["model"], common["out"],
                         bool(common["no_stream"]), params, bool(common["as_json"]),
                         common["api"])

    parameters = _signature(name, scenario)
    command.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in parameters} | {"return": None}
    command.__doc__ = scenario.help
    command.__name__ = name.replace("-", "_")
    app = typer.Typer(add_completion=False, rich_markup_mode="markdown")  # as the main app
    app.command(name)(command)
    return typer.main.get_command(app)


class _Listed(TyperCommand):
    """A scenario's line in `sm121 bench --help`: its name and summary from the table."""


class _Commands(MutableMapping[str, "Command"]):
    """The bench group's `commands`: its own, then one per scenario of the table, each
    built from its class when looked up by name (as `cli/commands` does for the root)."""

    def __init__(self, own: MutableMapping[str, Command]) -> None:
        self._own = own
        self._built: dict[str, Command] = {}

    def __getitem__(self, name: str) -> Command:
        if name in self._own:
            return self._own[name]
        if name not in scenarios.commands():
            raise KeyError(name)
        if name not in self._built:
            self._built[name] = scenario_command(name)
        return self._built[name]

    def __iter__(self) -> Iterator[str]:
        yield from self._own
        yield from (name for name in scenarios.commands() if name not in self._own)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def own_names(self) -> set[str]:
        return set(self._own)

    def __setitem__(self, name: str, command: Command) -> None:
        self._own[name] = command

    def __delitem__(self, name: str) -> None:
        del self._own[name]


class ScenarioGroup(TyperGroup):
    """The bench group: its own commands, then one per scenario of the table; `--help`
    lists the scenarios from the table, and a command is built when it is invoked."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self.table = _Commands(self.commands)
        self.commands = self.table

    def list_commands(self, ctx: Context) -> list[str]:
        return list(self.commands)  # the names only: looking each up would build it

    def get_command(self, ctx: Context, cmd_name: str) -> Command | None:
        summary = scenarios.commands().get(cmd_name)
        if summary is not None and cmd_name not in self.table.own_names():
            return _Listed(cmd_name, help=summary, short_help=summary)
        return super().get_command(ctx, cmd_name)

    def resolve_command(self, ctx: Context, args: list[str]
                        ) -> tuple[str | None, Command | None, list[str]]:
        name, command, rest = super().resolve_command(ctx, args)
        if isinstance(command, _Listed) and name is not None:
            command = self.commands[name]
        return name, command, rest
