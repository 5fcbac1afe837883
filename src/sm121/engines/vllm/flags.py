"""Which flags the vLLM that will run accepts: per engine version, from the engine itself when it
was read (cached under $SM121_HOME/engine-flags/), else from the lists bundled for a few versions.

Flags differ between versions (0.21 has --max-num-partial-prefills, 0.32 dropped it and added
--long-prefill-token-threshold-adaptive), so a recipe is checked against the list of its own
`engine.version`. When there is no list for that version, the nearest one is used and the
check says so, naming both versions.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from sm121 import paths
from sm121.engines.flag_list import FlagChoice, FlagList
from sm121.recipes.schema import Recipe

_BUNDLED = re.compile(r"^vllm-args-(\d+\.\d+\.\d+)\.txt$")
_RELEASE = re.compile(r"(\d+)\.(\d+)\.(\d+)((?:rc|\.?dev|\.?post)[\w.]*)?")
CACHE_DIR = "engine-flags"


def release_of(version: str | None) -> str | None:
    """'0.21.1rc1.dev339 + DSpark overlay' -> '0.21.1rc1.dev339'; None when no release."""
    match = _RELEASE.search(version or "")
    return match.group(0) if match else None


def _numbers(release: str) -> tuple[int, int, int]:
    match = _RELEASE.match(release)
    assert match is not None
    return int(match.group(1)), int(match.group(2)), int(match.group(3))


@cache
def bundled_versions() -> tuple[str, ...]:
    data = resources.files("sm121.engines").joinpath("data")
    found = [m.group(1) for entry in data.iterdir() if (m := _BUNDLED.match(entry.name))]
    return tuple(sorted(found, key=_numbers))


@cache
def bundled(version: str) -> FlagList:
    text = resources.files("sm121.engines").joinpath(f"data/vllm-args-{version}.txt").read_text()
    return FlagList(version, parse_list(text), "bundled")


def parse_list(text: str) -> frozenset[str]:
    return frozenset(line.strip() for line in text.splitlines()
                     if line.strip() and not line.startswith("#"))


def recipe_key(recipe: Recipe) -> str:
    """Names a recipe by its content: a list read by running one recipe's engine command serves
    that recipe (or, read by a built-in recipe, any), never another."""
    return hashlib.sha256(recipe.model_dump_json().encode()).hexdigest()[:16]


def choose(engine_version: str | None, image: str | None = None,
           recipe: str | None = None) -> FlagChoice:
    """The flag list for a recipe's engine: one read from that engine (cache), the bundled list
    of its release, or the nearest bundled list with a warning that names both versions.
    `recipe` (recipe_key) lets a list read by that recipe itself answer; without it only lists
    read by built-in recipes do."""
    release = release_of(engine_version)
    if image is not None and (read := cached_for_image(image, recipe)) is not None:
        mismatch = None if read.version == release else (
            f"the recipe says vLLM {engine_version or '(no engine.version)'}, but its image "
            f"{image} reported vLLM {read.version}: flags were checked against {read.version}'s "
            "list read from the image")
        return FlagChoice(read, mismatch)
    if release is not None:
        if image is None and (read := cached_native(release, recipe)) is not None:
            return FlagChoice(read, None)
        if release in bundled_versions():
            return FlagChoice(bundled(release), None)
    nearest = _nearest(release)
    said = f"vLLM {engine_version!r}" if engine_version else "no engine.version"
    return FlagChoice(bundled(nearest), (
        f"the recipe says {said}; sm121 has no flag list for it, so flags were checked against "
        f"vLLM {nearest}'s (bundled lists: {', '.join(bundled_versions())})"))


def _nearest(release: str | None) -> str:
    versions = bundled_versions()
    if release is None:
        return versions[-1]
    target = _numbers(release)
    return min(versions, key=lambda v: (abs(_numbers(v)[0] - target[0]),
                                        abs(_numbers(v)[1] - target[1]),
                                        abs(_numbers(v)[2] - target[2])))


# --- lists read from the engine that will run -----------------------------------------------

def cache_dir() -> Path:
    return paths.home() / CACHE_DIR


def cache_path(release: str, engine_id: str, recipe: str) -> Path:
    safe = re.sub(r"[^\w.-]", "_", engine_id)[:80]
    return cache_dir() / f"vllm-{release}-{safe}-{recipe}.json"


def save_cached(release: str, engine_id: str, image: str | None, flags: frozenset[str],
                how: str, *, recipe: str, builtin: bool) -> Path:
    """Keep a list read from an engine: per release, engine id (an image id, or the native
    command and node) and the recipe whose command produced it (recipe_key; `builtin`: one
    shipped with sm121, whose list may serve every recipe). `how` says where it came from."""
    path = cache_path(release, engine_id, recipe)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"version": release, "engine_id": engine_id, "image": image,
                                "how": how, "recipe": recipe, "builtin": builtin,
                                "flags": sorted(flags)}, indent=1))
    return path


def _serves(entry: dict[str, Any], recipe: str | None) -> bool:
    return entry.get("builtin") is True or (recipe is not None and entry.get("recipe") == recipe)


def cached_for_image(image: str, recipe: str | None = None) -> FlagList | None:
    """The newest list read from this image (whatever version it reported) that may serve
    this recipe."""
    return _newest(lambda entry: entry.get("image") == image and _serves(entry, recipe))


def cached_native(release: str, recipe: str | None = None) -> FlagList | None:
    """The newest list read from a native engine of this release that may serve this recipe."""
    return _newest(lambda entry: entry.get("image") is None and entry.get("version") == release
                   and _serves(entry, recipe))


def _newest(wanted: Callable[[dict[str, Any]], bool]) -> FlagList | None:
    folder = cache_dir()
    if not folder.is_dir():
        return None
    for path in sorted(folder.glob("vllm-*.json"), key=lambda p: -p.stat().st_mtime):
        try:
            entry = json.loads(path.read_text())
        except (OSError, ValueError):
            continue  # a half-written or foreign file: skip it
        if isinstance(entry, dict) and wanted(entry):
            return FlagList(str(entry["version"]), frozenset(entry["flags"]),
                            str(entry.get("how", path.name)))
    return None


_INVOCATION = re.compile(r"^ {2}(-[^\s].*?)(?:\s{2,}|$)")  # argparse indents options by 2
_LONG = re.compile(r"--([a-z0-9][a-z0-9-]*)")
_USAGE = re.compile(r"\[(--[a-z0-9][a-z0-9-]*)")


def parse_help(text: str) -> frozenset[str]:
    """The long options in argparse `--help` output: the option lines' invocation part and the
    usage line's [--flag] entries (vLLM prints every flag only with `--help=all`)."""
    names = {m.group(1) for line in text.splitlines()
             if (inv := _INVOCATION.match(line)) for m in _LONG.finditer(inv.group(1))}
    names |= {m.group(1)[2:] for m in _USAGE.finditer(text)}
    return frozenset(names)
