"""A ratchet on untyped results: `dict[str, Any]` under src/sm121/bench may only go down.
Issue 31's goal is under 60, left only in the HTTP client, the results file's edge and raw
records; when you type a dict away, lower CEILING to the new count in the same commit.

An alias does not hide one: `Record = dict[str, Any]` counts once per use of `Record` in
the module that defines it and in every module that imports it from there (the scenario
hooks took the raw results file under such an alias, uncounted, until this was added)."""

from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

SRC = Path(__file__).resolve().parents[3] / "src"
BENCH = SRC / "sm121" / "bench"
PATTERN = re.compile(r"dict\[str, *Any\]")
ALIAS = re.compile(r"^(\w+)(?:: *TypeAlias)? *= *dict\[str, *Any\]", re.M)
CEILING = 48


def _module(path: Path) -> str:
    return ".".join(path.relative_to(SRC).with_suffix("").parts)


def _aliases(files: dict[Path, str]) -> dict[tuple[str, str], Path]:
    """(module, alias name) -> the file that defines it."""
    return {(_module(path), name): path
            for path, text in files.items() for name in ALIAS.findall(text)}


def _alias_uses(path: Path, text: str, aliases: dict[tuple[str, str], Path]) -> int:
    tree = ast.parse(text)
    names = {name for (module, name) in aliases if module == _module(path)}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            names |= {a.asname or a.name for a in node.names
                      if (node.module, a.name) in aliases}
    return sum(1 for node in ast.walk(tree) if isinstance(node, ast.Name) and node.id in names
               and isinstance(node.ctx, ast.Load))  # its definition is counted as spelled


def _counts(root: Path = BENCH) -> Counter[str]:
    files = {path: path.read_text() for path in root.rglob("*.py")}
    aliases = _aliases(files)
    return Counter({str(path.relative_to(root)): len(PATTERN.findall(text))
                    + _alias_uses(path, text, aliases) for path, text in files.items()})


def test_untyped_dicts_in_bench_do_not_grow() -> None:
    counts = _counts()
    total = sum(counts.values())
    worst = ", ".join(f"{name} {n}" for name, n in counts.most_common(8))
    assert total <= CEILING, (f"{total} `dict[str, Any]` under src/sm121/bench (with the uses "
                              f"of its aliases), above the ceiling {CEILING}: type the new data "
                              f"(a pydantic model or a frozen dataclass). Most: {worst}")


def test_an_alias_counts_where_it_is_used() -> None:
    text = {
        "defines.py": "from typing import Any\nRecord = dict[str, Any]\n"
                      "def f(x: Record) -> Record: ...\n",
        "uses.py": "from sm121.bench.defines import Record as R\ndef g(y: R) -> list[R]: ...\n",
        "other.py": "from collections.abc import Callable\nRecord = Callable[[int], None]\n"
                    "def h(r: Record) -> None: ...\n",
    }
    files = {BENCH / name: body for name, body in text.items()}
    aliases = _aliases(files)
    assert _alias_uses(BENCH / "defines.py", text["defines.py"], aliases) == 2
    assert _alias_uses(BENCH / "uses.py", text["uses.py"], aliases) == 2
    assert _alias_uses(BENCH / "other.py", text["other.py"], aliases) == 0
