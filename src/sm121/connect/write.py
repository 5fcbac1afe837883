"""`sm121 connect --write`: merge sm121's keys into an agent's config file, keep everything
else, keep a backup, and say what changed.

JSON goes through json, TOML through tomlkit (a style-preserving reader and writer: the
user's comments and layout stay); what is written must read back (through json or tomllib)
as the old file with exactly sm121's values replaced and its credential keys removed, or
nothing is written. JSON numbers that are not finite (`1e999`, `NaN`) are refused: json
would write them back as `Infinity`, which no JSON reader takes. Values are never echoed
from the user's file (it may hold a key): only sm121's own values are shown."""

from __future__ import annotations

import copy
import json
import math
import os
import shutil
import tempfile
import time
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomlkit
import tomlkit.exceptions
import tomlkit.items

from sm121.connect.agents import ConfigEdit, KeyPath
from sm121.connect.render import quoted, toml_item, toml_key
from sm121.errors import Sm121Error

# Where an agent moves its config folder when told to (its own documented variables)
_HOMES = {"~/.codex/": "CODEX_HOME", "~/.config/": "XDG_CONFIG_HOME"}


@dataclass
class Written:
    path: Path
    backup: Path | None  # None: the file was new, or nothing changed
    changes: list[str] = field(default_factory=list)  # "set KEY = VALUE" / "KEY already set"

    @property
    def changed(self) -> bool:
        return any(not c.endswith("(already set)") for c in self.changes)


def resolve(shown: str, environ: Mapping[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    for prefix, name in _HOMES.items():
        if shown.startswith(prefix) and env.get(name):
            return Path(env[name]) / shown.removeprefix(prefix)
    return Path(shown).expanduser()


def apply(edit: ConfigEdit, environ: Mapping[str, str] | None = None) -> Written:
    path = resolve(edit.path, environ)
    target = path.resolve() if path.is_symlink() else path  # a dotfiles link stays a link
    old_text = target.read_text() if target.exists() else ""
    if edit.format == "json":
        new_text, changes = _merge_json(target, old_text, edit.entries, edit.removes)
    else:
        new_text, changes = _merge_toml(target, old_text, edit.entries)
    written = Written(target, None, changes)
    if not written.changed:
        return written
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.exists():
        written.backup = _backup(target)
    _write_atomic(target, new_text)
    return written


def _describe(keys: KeyPath, old: Any, new: Any, present: bool) -> str:
    name = ".".join(toml_key(k) for k in keys)
    shown = json.dumps(new) if isinstance(new, dict) else quoted(new)
    if present and old == new:
        return f"{name} (already set)"
    return f"{'replaced' if present else 'set'} {name} = {shown}"


def _merge_json(path: Path, text: str, entries: tuple[tuple[KeyPath, Any], ...],
                removes: tuple[KeyPath, ...] = ()) -> tuple[str, list[str]]:
    data = read_json_object(path, text)
    changes = []
    for keys in removes:  # their values are never shown: they are the user's keys
        node = _existing_parent(data, keys)
        if node is not None and keys[-1] in node:
            del node[keys[-1]]
            changes.append(f"removed {'.'.join(keys)} (a credential the agent would send to "
                           "this endpoint)")
    expected = copy.deepcopy(data)
    for keys, value in entries:
        node = _parent(path, data, keys)
        present = keys[-1] in node
        changes.append(_describe(keys, node.get(keys[-1]), value, present))
        node[keys[-1]] = copy.deepcopy(value)
        _parent(path, expected, keys)[keys[-1]] = copy.deepcopy(value)
    new_text = json.dumps(data, indent=2, allow_nan=False) + "\n"
    if _strict_loads(new_text) != expected:  # read back as its reader will
        raise Sm121Error(f"{path} did not read back as written; nothing was written",
                         "add the keys shown by `sm121 connect` (without --write) by hand")
    return new_text, changes


def read_json_object(path: Path, text: str) -> dict[str, Any]:
    """The file's JSON object, or an Sm121Error: not JSON, not an object, or a number that
    is not finite."""
    try:
        data = _strict_loads(text) if text.strip() else {}
    except ValueError as exc:
        raise Sm121Error(f"{path} is not plain JSON ({exc}); sm121 does not rewrite it",
                         "add the keys shown by `sm121 connect` (without --write) by hand") from exc
    if not isinstance(data, dict):
        raise Sm121Error(f"{path} holds a JSON {type(data).__name__}, not an object",
                         "sm121 merges into an object only; nothing was written")
    return data


def _strict_loads(text: str) -> Any:
    return json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text[:40]} is too large for a JSON reader")
    return value


def credentials_in(edit: ConfigEdit, environ: Mapping[str, str] | None = None) -> list[str]:
    """The credential keys (edit.removes) present in the agent's file now, by name: what
    the agent would send to the endpoint if only the shell lines were used."""
    if not edit.removes or edit.format != "json":
        return []
    path = resolve(edit.path, environ)
    try:
        data = _strict_loads(path.read_text()) if path.is_file() else {}
    except (OSError, ValueError):
        return []  # unreadable here: --write says why
    if not isinstance(data, dict):
        return []
    return [".".join(keys) for keys in edit.removes
            if keys[-1] in (_existing_parent(data, keys) or {})]


def _existing_parent(data: dict[str, Any], keys: KeyPath) -> dict[str, Any] | None:
    node: Any = data
    for key in keys[:-1]:
        node = node.get(key) if isinstance(node, dict) else None
    return node if isinstance(node, dict) else None


def _parent(path: Path, data: dict[str, Any], keys: KeyPath) -> dict[str, Any]:
    node = data
    for depth, key in enumerate(keys[:-1]):
        child = node.setdefault(key, {})
        if not isinstance(child, dict):
            raise Sm121Error(f"{path}: {'.'.join(keys[:depth + 1])} is not a table/object",
                             "sm121 does not replace it; nothing was written")
        node = child
    return node


def _merge_toml(path: Path, text: str, entries: tuple[tuple[KeyPath, Any], ...]
                ) -> tuple[str, list[str]]:
    """tomlkit edits the document in place, so the user's comments, order and formatting
    stay; sm121's tables replace the old ones whole (their sub-tables included). The result
    must read back, through tomllib, as the old file with exactly those values replaced."""
    try:
        old = tomllib.loads(text)
        document = tomlkit.parse(text)
    except (tomllib.TOMLDecodeError, tomlkit.exceptions.ParseError) as exc:
        raise Sm121Error(f"{path} is not valid TOML ({exc}); sm121 does not rewrite it",
                         "fix the file, or add the tables shown by `sm121 connect` by hand") from exc
    expected = copy.deepcopy(old)
    changes: list[str] = []
    for keys, value in entries:
        node = _parent(path, expected, keys)
        present = keys[-1] in node
        changes.append(_describe(keys, node.get(keys[-1]), value, present))
        node[keys[-1]] = copy.deepcopy(value)
    try:
        for keys, value in entries:
            parent = _toml_parent(document, keys)
            inline = isinstance(parent, tomlkit.items.InlineTable)
            parent[keys[-1]] = _spaced(toml_item(value, inline))
        new_text = tomlkit.dumps(document).rstrip("\n") + "\n"
        merged = tomllib.loads(new_text)
    except (ValueError, tomlkit.exceptions.TOMLKitError):  # TOMLDecodeError is a ValueError
        merged = None
    if merged != expected:
        raise Sm121Error(f"{path} defines {', '.join('.'.join(k) for k, _ in entries)} in a form "
                         "sm121 could not rewrite exactly; nothing was written",
                         "replace that definition with the tables `sm121 connect` prints, or "
                         "remove it, then run --write again")
    return new_text, changes


def _toml_parent(document: Any, keys: KeyPath) -> Any:
    """The tomlkit container that holds keys[-1], its missing tables made as super tables
    (`_parent` has already refused a key path through a value that is not a table)."""
    node = document
    for key in keys[:-1]:
        if key not in node:
            inline = isinstance(node, tomlkit.items.InlineTable)
            node[key] = tomlkit.inline_table() if inline else tomlkit.table(is_super_table=True)
        node = node[key]
    return node


def _spaced(item: Any) -> Any:
    """A table set in place of an old one ends with a blank line, as the table after it had
    (the old table's last line carried it)."""
    last = item
    while isinstance(last, tomlkit.items.Table):
        tables = [v for v in last.value.values() if isinstance(v, tomlkit.items.Table)]
        if not tables:
            last.add(tomlkit.nl())
            break
        last = tables[-1]
    return item


def _backup(path: Path) -> Path:
    stamp = time.strftime("%Y%m%dT%H%M%S")
    backup = path.with_name(f"{path.name}.sm121-backup-{stamp}")
    n = 1
    while backup.exists():
        n += 1
        backup = path.with_name(f"{path.name}.sm121-backup-{stamp}-{n}")
    shutil.copy2(path, backup)
    return backup


def _write_atomic(path: Path, text: str) -> None:
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o644
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
