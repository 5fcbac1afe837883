"""The measurement wing's packages reach each other only through what each declares public.

A wing is a package under sm121.bench: `report`, `tune`, and each scenario's package under
`scenarios/`. Its `__init__.py` names, in `PUBLIC`, the modules other packages may import
(its models, its Scenario class, the functions it offers); every other module of it is its
own. A module outside the wing (another wing, bench's own modules, the CLI) imports the
wing's package or a module in `PUBLIC`, never another: so tune runs the agents scenario
through its models, params, scenario and `sessions` (the public face of its sessions), not
through its session internals, and a wing's internals can change without a search of the
house. Private names (`_x`) are refused everywhere by test_hygiene; this is the module-level
rule beside it. Function-level imports count."""

from __future__ import annotations

import ast
from pathlib import Path

import sm121

SRC = Path(sm121.__file__).resolve().parent
BENCH = SRC / "bench"


def _module(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def wings() -> dict[str, tuple[str, ...]]:
    """Each wing package -> the modules its `PUBLIC` declares (None-safe: a wing without
    the declaration maps to no public module, and fails below)."""
    found: dict[str, tuple[str, ...]] = {}
    packages = [BENCH / "report", BENCH / "tune",
                *sorted(p for p in (BENCH / "scenarios").iterdir()
                        if (p / "__init__.py").is_file())]
    for package in packages:
        tree = ast.parse((package / "__init__.py").read_text())
        declared: tuple[str, ...] = ()
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(
                    isinstance(t, ast.Name) and t.id == "PUBLIC" for t in node.targets):
                declared = tuple(ast.literal_eval(node.value))
        found[_module(package / "__init__.py")] = declared
    return found


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every sm121 module or package this file imports (`from a.b import
    c` is a.b.c when c is a module file, else a.b)."""
    module = _module(path)
    is_package = path.name == "__init__.py"
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.startswith("sm121.")]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[:len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            if not source.startswith("sm121"):
                continue
            for alias in node.names:
                target = f"{source}.{alias.name}"
                as_file = SRC.parent / Path(*target.split("."))
                is_module = as_file.with_suffix(".py").is_file() or as_file.is_dir()
                found.append((node.lineno, target if is_module else source))
    return found


def all_imports() -> dict[str, list[tuple[int, str]]]:
    return {_module(path): _imports(path) for path in sorted(SRC.rglob("*.py"))}


def reaches_inside(public: dict[str, tuple[str, ...]],
                   imports: dict[str, list[tuple[int, str]]]) -> list[str]:
    """`importer:line -> module` for each import of a wing's module that its PUBLIC does not
    name, from outside the wing."""
    found = []
    for importer, targets in imports.items():
        for line, target in targets:
            for wing, modules in public.items():
                inside = target.startswith(wing + ".")
                if not inside or importer == wing or importer.startswith(wing + "."):
                    continue
                if target[len(wing) + 1:].split(".")[0] not in modules:
                    found.append(f"{importer}:{line} -> {target}")
    return found


def test_every_wing_declares_its_public_modules() -> None:
    declared = wings()
    assert "sm121.bench.tune" in declared and "sm121.bench.scenarios.agents" in declared
    for wing, modules in declared.items():
        folder = SRC.parent / Path(*wing.split("."))
        assert modules, f"{wing}/__init__.py declares no PUBLIC modules"
        missing = [m for m in modules if not (folder / f"{m}.py").is_file()
                   and not (folder / m).is_dir()]
        assert not missing, f"{wing}: PUBLIC names no such module: {missing}"


def test_no_module_reaches_inside_another_wing() -> None:
    assert reaches_inside(wings(), all_imports()) == []


def test_tune_reaches_the_agents_scenario_only_through_its_public_modules() -> None:
    """The rule as tune meets it: every import tune makes of another wing is public."""
    public = wings()
    tune = [f"{_module(p)} -> {t}" for p in sorted((BENCH / "tune").rglob("*.py"))
            for _, t in _imports(p) if t.startswith("sm121.bench.scenarios.")]
    assert tune, "tune imports the scenarios it runs"
    for line in tune:
        target = line.split(" -> ")[1]
        wing = next(w for w in public if target.startswith(w + "."))
        assert target[len(wing) + 1:].split(".")[0] in public[wing], line


def test_the_walk_catches_a_reach_inside() -> None:
    """An import of a module PUBLIC does not name is caught from outside its wing and let
    through from inside it; and the walk sees tune's real imports of the agents wing (so an
    empty answer above is a clean house, not a blind walk)."""
    public = wings()
    assert "session" not in public["sm121.bench.scenarios.agents"]
    imports = {"sm121.bench.tune.x": [(3, "sm121.bench.scenarios.agents.session")],
               "sm121.bench.scenarios.agents.y": [(4, "sm121.bench.scenarios.agents.session")]}
    assert reaches_inside(public, imports) == [
        "sm121.bench.tune.x:3 -> sm121.bench.scenarios.agents.session"]
    seen = {t for _, t in all_imports()["sm121.bench.tune.exclusive"]}
    assert "sm121.bench.scenarios.agents.sessions" in seen
