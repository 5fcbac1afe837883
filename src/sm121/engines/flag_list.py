"""A list of the flags an engine accepts, and the one chosen for a recipe: engine-neutral
values, so plan and launch read an adapter's answer without knowing the engine."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FlagList:
    version: str  # the release the list was read from ("0.21.0")
    flags: frozenset[str]
    source: str  # "bundled" or where it was read ("native on local", "image sha256:...")


@dataclass(frozen=True)
class FlagChoice:
    flags: FlagList
    warning: str | None  # set when the list is not the recipe's own version
