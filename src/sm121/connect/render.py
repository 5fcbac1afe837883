"""The settings as the user takes them: shell lines that `eval` can take (`--shell`), labelled
blocks for reading (shell lines, each config fragment, the command, notes), and JSON.

Every value that reaches a shell line is one shlex-quoted word, comment lines included, and
every printed line is checked as the shell reads it: a control character (a newline would end
a comment and start a command) refuses the whole output rather than print it."""

from __future__ import annotations

import json
import re
import shlex
import tomllib
from dataclasses import asdict
from typing import Any

import tomlkit

from sm121.connect.agents import ClientSettings, ConfigEdit
from sm121.errors import Sm121Error

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def quoted(value: object) -> str:
    return shlex.quote(str(value))


def shell_lines(s: ClientSettings) -> list[str]:
    """What `eval "$(sm121 connect ... --shell)"` runs: exports and unsets only; the agent's
    command is a comment (eval must not start it)."""
    lines = [f"# sm121 connect: {quoted(s.agent)} ({s.protocol}) -> {quoted(s.base_url)}, "
             f"model {quoted(s.model)}"]
    if s.key_env:
        lines.append(f"# the endpoint wants a key: {quoted(s.key_env)} must hold it")
    lines += [f"export {_name(k)}={quoted(v)}" for k, v in s.env.items()]
    # "$NAME" is left to the shell, so the key itself is never printed
    lines += [f'export {_name(k)}="${_name(v)}"' for k, v in s.env_from.items()]
    lines += [f"unset {_name(k)}" for k in s.unset]
    lines.append(f"# then run: {s.command_line()}")
    return checked(lines)


def blocks(s: ClientSettings, shell_form: str) -> list[str]:
    """Everything, as separate labelled blocks: the shell lines, each config fragment, the
    example code, the command and the notes. Only the first block is shell."""
    out = [f"# --- shell (or: eval \"$({shell_form})\")", *shell_lines(s)]
    for edit in s.edits:
        out += ["", f"# --- {edit.path}: sm121's keys, merged into the file by "
                    f"`{shell_form.removesuffix(' --shell')} --write` (other settings kept)",
                *fragment(edit).rstrip("\n").split("\n")]
    if s.example:
        out += ["", "# --- example.py", *s.example.rstrip("\n").split("\n")]
    if s.limits:
        out += ["", f"# --- limits: context window {s.limits.context}, output {s.limits.output}, "
                    f"compact past {s.limits.compact_at} tokens "
                    f"(room for one turn of {s.limits.headroom} more)"]
    out += ["", "# --- then run", s.command_line()]
    if s.notes:
        out += ["", "# --- notes", *(f"# {note}" for note in s.notes)]
    return checked(out)


def checked(lines: list[str]) -> list[str]:
    for line in lines:
        if any(not c.isprintable() for c in line):
            raise Sm121Error(f"refusing to print a line with a control character: {line!r}",
                             "a value from the endpoint or the command line is not plain text")
    return lines


def _name(name: str) -> str:
    if not _ENV_NAME.fullmatch(name):
        raise Sm121Error(f"{name!r} is not a variable name", "e.g. SM121_API_KEY")
    return name


def fragment(edit: ConfigEdit) -> str:
    tree = edit.tree()
    if edit.format == "json":
        return json.dumps(tree, indent=2) + "\n"
    return toml_text(tree)


def toml_text(tree: dict[str, Any]) -> str:
    """TOML for sm121's own tables, written by tomlkit (`toml_item`), and proven by reading
    it back with tomllib."""
    document = tomlkit.document()
    for key, value in tree.items():
        document[key] = toml_item(value)
    text = tomlkit.dumps(document).strip("\n") + "\n"
    if tomllib.loads(text) != tree:
        raise Sm121Error("the TOML sm121 wrote does not read back as written", repr(tree))
    return text


def toml_item(value: object, inline: bool = False) -> Any:
    """A tomlkit item for one of sm121's values: a dict becomes a table, and a table with no
    value of its own a super table, so that `{"a": {"b": {...}}}` is written `[a.b]` (the
    form Codex's docs show) and not an empty `[a]` before it; inside a user's inline table,
    an inline table (TOML allows no other table there)."""
    if not isinstance(value, dict):
        return tomlkit.item(value)
    table: Any = (tomlkit.inline_table() if inline else
                  tomlkit.table(is_super_table=all(isinstance(v, dict) for v in value.values())))
    for key, child in value.items():
        table[key] = toml_item(child, inline)
    return table


def toml_key(key: str) -> str:
    return key if _BARE_KEY.fullmatch(key) else json.dumps(key)


def to_json(s: ClientSettings, probes: list[dict[str, Any]]) -> dict[str, Any]:
    data = asdict(s)
    data["files"] = {edit.path: fragment(edit) for edit in s.edits}
    data["edits"] = [{"path": e.path, "format": e.format,
                      "keys": [list(keys) for keys, _ in e.entries]} for e in s.edits]
    data["command"] = s.command_line()
    data["probe"] = probes
    return data
