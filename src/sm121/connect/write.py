"""`sm121 connect --write`: merge sm121's keys into an agent's config file, keep everything
else, keep a backup, and say what changed.

JSON goes through json. TOML is read by tomllib; there is no TOML writer among the
dependencies, so only sm121's own tables are rewritten as text (the old ones taken out by
their headers, the new ones appended), and the result must read back, through tomllib, as the
old file with exactly those tables replaced, or nothing is written. Values are never echoed
from the user's file (it may hold a key): only sm121's own values are shown."""

from __future__ import annotations

import copy
import json
import os
import shutil
import tempfile
import time
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sm121.connect.agents import ConfigEdit, KeyPath
from sm121.connect.render import quoted, toml_key, toml_text
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
    merge = _merge_json if edit.format == "json" else _merge_toml
    new_text, changes = merge(target, old_text, edit.entries)
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


def _merge_json(path: Path, text: str, entries: tuple[tuple[KeyPath, Any], ...]
                ) -> tuple[str, list[str]]:
    try:
        data = json.loads(text) if text.strip() else {}
    except ValueError as exc:
        raise Sm121Error(f"{path} is not plain JSON ({exc}); sm121 does not rewrite it",
                         "add the keys shown by `sm121 connect` (without --write) by hand") from exc
    if not isinstance(data, dict):
        raise Sm121Error(f"{path} holds a JSON {type(data).__name__}, not an object",
                         "sm121 merges into an object only; nothing was written")
    changes = []
    for keys, value in entries:
        node = _parent(path, data, keys)
        present = keys[-1] in node
        changes.append(_describe(keys, node.get(keys[-1]), value, present))
        node[keys[-1]] = copy.deepcopy(value)
    return json.dumps(data, indent=2) + "\n", changes


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
    try:
        old = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise Sm121Error(f"{path} is not valid TOML ({exc}); sm121 does not rewrite it",
                         "fix the file, or add the tables shown by `sm121 connect` by hand") from exc
    expected = copy.deepcopy(old)
    changes: list[str] = []
    ours: dict[str, Any] = {}
    for keys, value in entries:
        node = _parent(path, expected, keys)
        present = keys[-1] in node
        changes.append(_describe(keys, node.get(keys[-1]), value, present))
        node[keys[-1]] = copy.deepcopy(value)
        _parent(path, ours, keys)[keys[-1]] = value
    kept = _without_tables(text, {keys for keys, _ in entries})
    new_text = (kept.rstrip("\n") + "\n\n" if kept.strip() else "") + toml_text(ours)
    try:
        merged = tomllib.loads(new_text)
    except tomllib.TOMLDecodeError:
        merged = None
    if merged != expected:
        raise Sm121Error(f"{path} defines {', '.join('.'.join(k) for k, _ in entries)} in a form "
                         "sm121 does not rewrite (an inline table or dotted keys); nothing was "
                         "written", "replace that definition with the tables `sm121 connect` "
                         "prints, or remove it, then run --write again")
    return new_text, changes


def _without_tables(text: str, owned: set[KeyPath]) -> str:
    """The text without the tables (and their sub-tables) at the owned key paths: a table runs
    from its header to the next header."""
    out, skipping = [], False
    for line in text.splitlines(keepends=True):
        header = _header_path(line)
        if header is not None:
            skipping = any(header[:len(keys)] == keys for keys in owned)
        if not skipping:
            out.append(line)
    return "".join(out)


def _header_path(line: str) -> KeyPath | None:
    """The key path of a `[a.b]` table header, read by tomllib itself (quoted keys and
    spacing included); None for any other line, and for `[[array]]` headers."""
    stripped = line.strip()
    if not stripped.startswith("[") or stripped.startswith("[["):
        return None
    try:
        node: Any = tomllib.loads(stripped)
    except tomllib.TOMLDecodeError:
        return None
    keys: list[str] = []
    while isinstance(node, dict) and len(node) == 1:
        key, node = next(iter(node.items()))
        keys.append(key)
    return tuple(keys) if keys else None


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
