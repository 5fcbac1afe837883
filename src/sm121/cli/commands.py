"""The command table: which module builds each `sm121` command, imported only when that
command runs or its help is shown (pip's `commands_dict` is the model). `sm121 plan` loads
the plan module, not the gateway's or the bench's; the table is the one list of commands."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

import typer
from typer.core import TyperGroup
from typer.main import get_group

if TYPE_CHECKING:
    # typer vendors click: its own Context and Command are the types TyperGroup declares.
    from typer._click import Command, Context

# Command name -> the module under sm121.cli whose register(app) defines it, in help order
# (single commands, then command groups, as typer listed them when main.py registered them).
COMMANDS: dict[str, str] = {
    "plan": "plan",
    "serve": "serve", "status": "serve", "logs": "serve", "stop": "serve",
    "doctor": "doctor",
    "startup": "startup",
    "top": "top",
    "recipes": "recipes",
    "bench": "bench",
    "gateway": "gateway",
    "memory": "memory",
    "cluster": "cluster",
    "engine": "engine",
    "model": "model",
}

_loaded: dict[str, TyperGroup] = {}  # module -> the commands its register() made


def _commands_of(module_name: str, markup_mode: Any) -> TyperGroup:
    if module_name not in _loaded:
        module = importlib.import_module(f"sm121.cli.{module_name}")
        holder = typer.Typer(rich_markup_mode=markup_mode)
        module.register(holder)
        _loaded[module_name] = get_group(holder)
    return _loaded[module_name]


class LazyCommands(TyperGroup):
    """The root group: commands come from COMMANDS, each module imported on first use."""

    def list_commands(self, ctx: Context) -> list[str]:
        return [*super().list_commands(ctx), *(n for n in COMMANDS if n not in self.commands)]

    def get_command(self, ctx: Context, cmd_name: str) -> Command | None:
        command = super().get_command(ctx, cmd_name)
        if command is not None or cmd_name not in COMMANDS:
            return command
        group = _commands_of(COMMANDS[cmd_name], self.rich_markup_mode)
        return group.get_command(ctx, cmd_name)
