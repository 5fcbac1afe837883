"""Which flags the llama-server that will run accepts, read from its own `--help`.

llama.cpp prints every option as one entry: its spellings (`-c, --ctx-size N`), the negative
spellings of a boolean (`-kvu, --kv-unified, -no-kvu, --no-kv-unified`), the value hints (one
per value it takes) and the env var that sets it (`(env: LLAMA_ARG_CTX_SIZE)`). That text is
bundled per release (engines/data/llamacpp-help-bBUILD.txt, captured from the binary
scripts/llamacpp-build.sh builds) and parsed into `Option`s, the one table args, trust and the
argv check read.

sm121 keys each option by its FIRST spelling without dashes (`c`, `np`, `ctk`, `ngl`,
`cache-reuse`): a recipe, a profile and `--set` all say `np`, so one flag is one key and a
profile's value replaces the recipe's (args.py refuses the other spellings, naming this one).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources

from sm121.engines.flag_list import FlagChoice, FlagList

_BUNDLED = re.compile(r"^llamacpp-help-b(\d+)\.txt$")
# llama.cpp's release tags are build numbers: `b11434`; `--version` prints `version: 11434 (...)`.
_RELEASE = re.compile(r"\bb?(\d{3,6})\b")
_ENV = re.compile(r"\(env: ([A-Z0-9_]+)\)")
_SPELLING = re.compile(r"--?[A-Za-z0-9][A-Za-z0-9-]*")


@dataclass(frozen=True)
class Option:
    key: str  # the first spelling without dashes: how recipes key it
    spellings: tuple[str, ...]  # with their dashes, the positive ones
    negatives: tuple[str, ...]  # a boolean's off spellings (`--no-kv-unified`)
    values: int  # how many values follow it on the command line
    env: str | None  # the env var that sets it

    @property
    def flag(self) -> str:
        """How sm121 renders it: its first spelling, as llama.cpp's docs write it."""
        return self.spellings[0]


@dataclass(frozen=True)
class HelpBook:
    version: str  # the release: "b11434"
    options: Mapping[str, Option]  # by key
    by_spelling: Mapping[str, Option]  # every spelling, dashes included, negatives too
    by_env: Mapping[str, Option]

    @property
    def names(self) -> frozenset[str]:
        """Every spelling without its dashes: what the seam test and flag checks compare."""
        return frozenset(s.lstrip("-") for s in self.by_spelling)

    def option(self, name: str) -> Option | None:
        """The option a recipe's arg name (no dashes) or a spelling (with) names."""
        if name.startswith("-"):
            return self.by_spelling.get(name)
        return self.by_spelling.get(f"-{name}") or self.by_spelling.get(f"--{name}")


def release_of(version: str | None) -> str | None:
    """'b11434', '11434' or 'version: 11434 (b11434)' -> 'b11434'; None when no build number."""
    match = _RELEASE.search(version or "")
    return f"b{match.group(1)}" if match else None


def _entry_head(line: str) -> str | None:
    """The spellings-and-hints part of an option's first line (the help text follows after a
    run of spaces or on the next line); None for a line that starts no option."""
    if not line.startswith("-"):
        return None
    # The first spelling is padded after its comma (`-c,    --ctx-size N`): close that up.
    return re.split(r"\s{2,}", re.sub(r",\s+", ", ", line.rstrip()), maxsplit=1)[0]


def _option(head: str, env: str | None) -> Option | None:
    parts = [p.strip() for p in head.split(", ")]
    spellings: list[str] = []
    values = 0
    for i, part in enumerate(parts):
        words = part.split()
        if not words or not _SPELLING.fullmatch(words[0]):
            return None
        spellings.append(words[0])
        if i == len(parts) - 1:
            values = len(words) - 1  # the value hints after the last spelling
    positive = [s for s in spellings if not s.lstrip("-").startswith("no-")]
    if not positive:  # an option that is itself a `--no-...` (`--no-mmap`)
        positive, negatives = spellings, []
    else:
        negatives = [s for s in spellings if s not in positive]
    return Option(key=positive[0].lstrip("-"), spellings=tuple(positive),
                  negatives=tuple(negatives), values=values, env=env)


def parse_book(text: str, version: str) -> HelpBook:
    """`llama-server --help` into its options. An entry's env var may sit on a later line of
    its help text."""
    heads: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        head = _entry_head(line)
        if head is not None:
            heads.append((head, [line]))
        elif heads:
            heads[-1][1].append(line)
    options: dict[str, Option] = {}
    for head, lines in heads:
        env = _ENV.search(" ".join(lines))
        option = _option(head, env.group(1) if env else None)
        if option is not None and option.key not in options:
            options[option.key] = option
    by_spelling = {s: o for o in options.values() for s in (*o.spellings, *o.negatives)}
    by_env = {o.env: o for o in options.values() if o.env}
    return HelpBook(version, options, by_spelling, by_env)


def parse_help(text: str) -> frozenset[str]:
    return parse_book(text, "read").names


@cache
def bundled_versions() -> tuple[str, ...]:
    data = resources.files("sm121.engines").joinpath("data")
    found = [m.group(1) for entry in data.iterdir() if (m := _BUNDLED.match(entry.name))]
    return tuple(f"b{n}" for n in sorted(found, key=int))


@cache
def book(version: str) -> HelpBook:
    """The bundled help of a release (or the nearest bundled one below or above it)."""
    chosen = nearest(version)
    text = resources.files("sm121.engines").joinpath(
        f"data/llamacpp-help-{chosen}.txt").read_text()
    return parse_book(text, chosen)


def nearest(version: str | None) -> str:
    bundled = bundled_versions()
    release = release_of(version)
    if release in bundled or release is None:
        return release or bundled[-1]
    number = int(release[1:])
    return min(bundled, key=lambda v: abs(int(v[1:]) - number))


def bundled(version: str) -> FlagList:
    return FlagList(version, book(version).names, "bundled")


def choose(engine_version: str | None) -> FlagChoice:
    """The bundled list of the recipe's release, or the nearest with a warning naming both."""
    release = release_of(engine_version)
    chosen = nearest(engine_version)
    warning = None
    if release != chosen:
        warning = (f"no flag list for llama.cpp {engine_version or '(no engine.version)'}: "
                   f"flags were checked against {chosen}'s bundled list")
    return FlagChoice(bundled(chosen), warning)
