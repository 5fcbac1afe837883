"""The command table: which module builds each `sm121` command, imported only when that
command runs or its help is shown (pip's `commands_dict` is the model). `sm121 plan` loads
the plan module, not the gateway's or the bench's; the table is the one list of commands."""

from __future__ import annotations

import importlib
from collections.abc import Iterator, MutableMapping
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
    "connect": "connect",
    "stage": "stage",
    "tune": "tune",
    "recipes": "recipes",
    "bench": "bench",
    "gateway": "gateway",
    "memory": "memory",
    "cluster": "cluster",
    "engine": "engine",
    "model": "model",
}

def _commands_of(module_name: str, markup_mode: Any) -> TyperGroup:
    """The commands the module's register() makes, built afresh (as typer builds the whole
    tree on each call of the app): what they offer may depend on registries."""
    module = importlib.import_module(f"sm121.cli.{module_name}")
    holder = typer.Typer(rich_markup_mode=markup_mode)
    module.register(holder)
    return get_group(holder)


class _Table(MutableMapping[str, "Command"]):
    """The root group's `commands`: names known without an import; a command is built from
    its module when it is looked up (to run it, or for its line of help)."""

    def __init__(self, eager: MutableMapping[str, Command], markup_mode: Any) -> None:
        self._eager, self._markup_mode = eager, markup_mode
        self._built: dict[str, TyperGroup] = {}  # module -> its commands, for this tree

    def __getitem__(self, name: str) -> Command:
        if name in self._eager:
            return self._eager[name]
        if name not in COMMANDS:
            raise KeyError(name)
        module = COMMANDS[name]
        if module not in self._built:
            self._built[module] = _commands_of(module, self._markup_mode)
        return self._built[module].commands[name]

    def __iter__(self) -> Iterator[str]:
        yield from self._eager
        yield from (name for name in COMMANDS if name not in self._eager)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __setitem__(self, name: str, command: Command) -> None:
        self._eager[name] = command

    def __delitem__(self, name: str) -> None:
        del self._eager[name]


class LazyCommands(TyperGroup):
    """The root group: its commands come from COMMANDS, each module imported on first use."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self.commands = _Table(self.commands, self.rich_markup_mode)

    def list_commands(self, ctx: Context) -> list[str]:
        return list(self.commands)  # the names only: TyperGroup's would build every command
