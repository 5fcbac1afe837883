"""CLI output read by programs: piped tables keep every name and value whole, and every read
command has --json."""

from __future__ import annotations

import json

from support import invoke_cli
from typer.main import get_command

from sm121.cli.main import app

NARROW = {"COLUMNS": "40"}  # a narrow terminal behind the pipe must not matter
# Commands that act or stream raw text rather than report: everything else must have --json.
NOT_READ = {"serve", "stop", "logs", "model tiny", "bench report"}


def test_piped_recipes_list_prints_every_name_whole() -> None:
    """Regression: `sm121 recipes list | cat` printed `deepseek-v4-f…`."""
    names = [r["name"] for r in json.loads(invoke_cli("recipes", "list", "--json").stdout)]
    table = invoke_cli("recipes", "list", env=NARROW).stdout
    assert "…" not in table
    rows = [line.split("│")[1].strip() for line in table.splitlines() if line.startswith("│")]
    assert [row for row in rows if row] == names


def test_piped_tables_are_never_truncated() -> None:
    for args in (("recipes", "diff", "deepseek-v4-flash-eugr-agent", "--profiles",
                  "agent,batch"), ("plan", "deepseek-v4-flash-eugr-agent", "-p", "agent")):
        out = invoke_cli(*args, env=NARROW).stdout
        assert "…" not in out, args


def _leaves(command: object, path: tuple[str, ...] = ()) -> list[tuple[str, object]]:
    children = getattr(command, "commands", None)
    if children is None:
        return [(" ".join(path), command)]
    return [leaf for name, sub in children.items() for leaf in _leaves(sub, (*path, name))]


def test_every_read_command_has_json() -> None:
    leaves = _leaves(get_command(app))
    missing = [path for path, command in leaves if path not in NOT_READ
               and "--json" not in [o for p in command.params for o in p.opts]]  # type: ignore[attr-defined]
    assert missing == []
    assert {path for path, _ in leaves} >= NOT_READ  # the exceptions still exist
