"""memory/ does its math without I/O (DESIGN.md: "memory/ KV / memory planner (pure math)
and calibration; sizing/ does its I/O"). The rule, checked on the source with `ast`, every
import counted (function-level ones too):

1. A memory module imports from the standard library only modules that cannot reach a file,
   a process, the network or the clock: `PURE_STDLIB` (math, statistics, re, dataclasses,
   typing, collections.abc, __future__). No os, pathlib, io, json, shutil, glob, tempfile,
   subprocess, socket, ssl, urllib, http, asyncio, threading, time or datetime.
2. From outside the standard library, only pydantic (models) and the sm121 modules in
   `PURE_SM121`, whose names it uses are types and pure functions; and from those, no name
   that reads like I/O (`load_*`, `save_*`, `read_*`, `write_*`, `find_*`, `scrape*`).
3. No call of the builtins that reach outside: open, input, print, exec, eval, __import__.

What it needs from disk (the model's config.json and weight sizes, the calibration store, a
cluster file's node memory) arrives as values in the MemoryRequest: sizing/ reads them
(sizing/inputs.py, model_files.py, calibration_store.py, node.py)."""

from __future__ import annotations

import ast
from pathlib import Path

import sm121

MEMORY = Path(sm121.__file__).resolve().parent / "memory"

PURE_STDLIB = {"__future__", "math", "statistics", "re", "dataclasses", "typing", "enum",
               "collections.abc"}
PURE_SM121 = {
    "sm121.errors", "sm121.findings",
    "sm121.engines.adapter",  # MemoryFlags: the engine's names of the settings read
    "sm121.recipes.schema",
    "sm121.recipes.loader",  # LoadedRecipe, the type only (rule 2 keeps load_recipe out)
    "sm121.plan.effective",  # recipe + profile + overrides -> args and env, pure
}
THIRD_PARTY = {"pydantic"}
IO_NAME_PREFIXES = ("load_", "save_", "read_", "write_", "find_", "scrape")
IO_BUILTINS = {"open", "input", "print", "exec", "eval", "__import__"}


def _imports(tree: ast.AST) -> list[tuple[str, list[str]]]:
    """(module, names imported from it) for every import in the tree."""
    found: list[tuple[str, list[str]]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, "memory/ uses absolute imports"
            found.append((node.module or "", [alias.name for alias in node.names]))
    return found


def _allowed(module: str) -> bool:
    return (module in PURE_STDLIB or module.split(".")[0] in THIRD_PARTY
            or module in PURE_SM121 or module.startswith("sm121.memory"))


def _problems(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    problems = []
    for module, names in _imports(tree):
        if not _allowed(module):
            problems.append(f"imports {module}")
        problems += [f"imports {module}.{name} (reads like I/O)" for name in names
                     if name.startswith(IO_NAME_PREFIXES)]
    problems += [f"calls {node.func.id}() at line {node.lineno}" for node in ast.walk(tree)
                 if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                 and node.func.id in IO_BUILTINS]
    return problems


def test_memory_modules_do_no_io() -> None:
    files = sorted(MEMORY.glob("*.py"))
    assert len(files) > 5
    found = {f.name: p for f in files if (p := _problems(f))}
    assert found == {}, "memory/ must stay pure (see this test's docstring): " + repr(found)


def test_the_rule_catches_a_file_read(tmp_path: Path) -> None:
    sample = tmp_path / "leaky.py"
    sample.write_text("import json\nfrom pathlib import Path\n"
                      "from sm121.recipes.loader import load_recipe\n"
                      "def f():\n    import subprocess\n    return open('x')\n")
    assert _problems(sample) == [
        "imports json", "imports pathlib", "imports sm121.recipes.loader.load_recipe (reads like "
        "I/O)", "imports subprocess", "calls open() at line 6"]
