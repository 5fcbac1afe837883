"""Write the chosen profile as `tuned` into the user's recipe, $SM121_HOME/recipes/NAME.yaml.

The user's file is edited as text, so its own comments stay: the block between the tune
markers is replaced (or added right under `profiles:`), every value with a comment line of
what measured it. When the user has no file of that name, it starts as a copy of the recipe
tune measured (the built-in's text); the built-in itself is package data and never written.
The result is parsed and validated before it replaces the file (atomically).

The comments and the purpose quote what the tune read back (the device, the engine's version,
an arm's reason: a stranger's when the tune folder was handed over): each is one line as
display.escape shows it, so no control character ends the comment or makes the YAML
unreadable (PyYAML refuses them anywhere in a file)."""

from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from sm121.display import escape
from sm121.errors import Sm121Error
from sm121.recipes.loader import parse_yaml, user_recipes_dir, validate_model
from sm121.recipes.schema import ArgValue, MeasuredOn, Recipe

PROFILE = "tuned"
BEGIN = "# sm121 tune: begin (written by `sm121 tune`; a rerun replaces this block)"
END = "# sm121 tune: end"
_PROFILES = re.compile(r"^profiles:\s*(#.*)?$")


@dataclass(frozen=True)
class TunedProfile:
    purpose: str
    args: dict[str, ArgValue]
    comments: dict[str, str]  # arg -> what measured it (one line)
    header: list[str]  # lines above the profile: conditions, date, report
    measured_on: MeasuredOn | None = None  # the device, pool and workload it holds for


# A comment line's length, at most: a stranger's megabyte reason is cut to this
LINE_LIMIT = 1000


def _one_line(text: str) -> str:
    """One comment line (or the purpose): whitespace runs as one space, every other hidden
    character spelled out (`\\x1b`), bounded."""
    return escape(" ".join(text.split()), LINE_LIMIT)


def _value(value: ArgValue) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    # A JSON string is a YAML string, ASCII only (ensure_ascii), control characters escaped;
    # DEL, which JSON leaves as itself and YAML refuses, as its escape, so the value reads back
    return json.dumps(value).replace("\x7f", "\\u007f")


def block(profile: TunedProfile, indent: str = "  ") -> list[str]:
    inner, deeper = indent * 2, indent * 3
    lines = [f"{indent}{BEGIN}"] + [f"{indent}# {_one_line(h)}" for h in profile.header]
    lines += [f"{indent}{PROFILE}:", f"{inner}purpose: {json.dumps(_one_line(profile.purpose))}"]
    if profile.measured_on is not None:  # JSON is YAML: one flow mapping
        lines += [f"{inner}# where its capacity was measured: a smaller pool holds fewer agents",
                  f"{inner}measured_on: "
                  f"{json.dumps(profile.measured_on.model_dump(exclude_none=True))}"]
    lines.append(f"{inner}args:")
    for name, value in profile.args.items():
        if name in profile.comments:
            lines.append(f"{deeper}# {_one_line(profile.comments[name])}")
        lines.append(f"{deeper}{name}: {_value(value)}")
    return lines + [f"{indent}{END}"]


def with_tuned(text: str, profile: TunedProfile, source: str) -> str:
    """`text` (a recipe's YAML) with the tuned block replaced or added under `profiles:`."""
    lines = text.splitlines()
    if BEGIN in text:
        start = next(i for i, line in enumerate(lines) if line.strip() == BEGIN)
        end = next((i for i in range(start, len(lines)) if lines[i].strip() == END), None)
        if end is None:
            raise Sm121Error(f"{source}: the tune block has no end marker {END!r}",
                             "restore the marker line or delete the block, then rerun tune")
        del lines[start:end + 1]
    at = next((i for i, line in enumerate(lines) if _PROFILES.match(line)), None)
    if at is None:
        if any(line.startswith("profiles:") for line in lines):
            raise Sm121Error(f"{source}: `profiles:` is written inline",
                             "write the profiles as a block mapping (one per line)")
        lines += ["profiles:"]
        at = len(lines) - 1
    following = next((line for line in lines[at + 1:] if line.strip()
                      and not line.lstrip().startswith("#")), "  x")
    indent = following[:len(following) - len(following.lstrip())] or "  "
    if PROFILE in _profile_names(lines, source):
        raise Sm121Error(f"{source}: already has a profile {PROFILE!r} outside tune's block",
                         f"rename it, or delete it so that tune may write {PROFILE!r}")
    lines[at + 1:at + 1] = block(profile, indent)
    return "\n".join(lines) + "\n"


def _profile_names(lines: list[str], source: str) -> set[str]:
    data = parse_yaml("\n".join(lines), source)
    return set((data.get("profiles") or {}).keys())


def check(text: str, profile: TunedProfile, source: str) -> Recipe:
    recipe = validate_model(Recipe, parse_yaml(text, source), source)
    written = recipe.profiles.get(PROFILE)
    if written is None or {k: written.args.get(k) for k in profile.args} != dict(profile.args):
        raise Sm121Error(f"{source}: the written {PROFILE!r} profile does not read back as "
                         "its values", "a bug in sm121 tune: report it with the file")
    return recipe


def write_tuned(name: str, original_text: str, profile: TunedProfile) -> Path:
    """Write `tuned` into the user's NAME.yaml (starting from `original_text`, the recipe
    tune measured, when the user has none); returns the path."""
    folder = user_recipes_dir()
    path = folder / f"{name}.yaml"
    current = path.read_text() if path.is_file() else original_text
    text = with_tuned(current, profile, str(path))
    check(text, profile, str(path))
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{name}.", suffix=".yaml")
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    os.replace(tmp, path)
    return path
