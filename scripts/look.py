"""The import graph of src/sm121 as the AST states it: every import, at module level and
inside functions (a function-level import dodges a circle at import time but keeps it in the
design), resolved to the module it loads.

Prints four things, run from the project root:
  circles   groups of modules that import each other, directly or round a loop
  arrows up a library module (outside sm121.cli) that imports sm121.cli
  floors    the longest chain of package layers below cli (base modules such as
            sm121.errors count as one package, "base")
  against the layout  a package importing one that LAYOUT (below; docs/layout.md describes
            each) puts on its own floor or above it, or a package LAYOUT does not name

    python scripts/look.py [--json] [--src src]

Exit status 1 when there is a circle or an arrow up. tests/unit/architecture loads this file
and asserts on the same functions."""

from __future__ import annotations

import argparse
import ast
import json
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = "sm121"
CLI = f"{ROOT}.cli"
BASE = "base"  # the package of sm121's top-level modules (errors, paths, sse, ...)

# The documented layout: every package and its floor. A package imports only packages on a
# lower floor; docs/layout.md says what each holds and why it sits where it does.
LAYOUT: dict[str, int] = {
    "cli": 8,
    "bench": 7, "doctor": 7, "monitor": 7, "connect": 7,
    "serving": 6,  # above gateway: starting a gateway writes its config and upstreams types
    "gateway": 5, "launch": 5, "sizing": 5,
    "memory": 4, "stage": 4,
    "plan": 3, "locality": 3,
    "engines": 2, "cluster": 2, "runs": 2,
    "recipes": 1, "hosts": 1, "models": 1,
    "protocols": 1,  # API shapes (paths, stream events, tool calls, usage): low, for all
    BASE: 0,
}


@dataclass
class Graph:
    modules: set[str] = field(default_factory=set)
    edges: dict[str, set[str]] = field(default_factory=dict)  # importer -> imported

    def add(self, source: str, target: str) -> None:
        if source != target:
            self.edges.setdefault(source, set()).add(target)


def module_name(path: Path, src: Path) -> str:
    parts = list(path.relative_to(src).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    """The absolute module an ImportFrom names (relative imports included)."""
    if node.level == 0:
        return node.module or ""
    package = module.split(".") if is_package else module.split(".")[:-1]
    base = package[:len(package) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imported(tree: ast.AST, module: str, is_package: bool, modules: set[str]) -> set[str]:
    """The sm121 modules this tree imports: `from a.b import c` is a.b.c when that is a
    module, else a.b (c is a name in it)."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            origin = _resolve(node, module, is_package)
            names = [f"{origin}.{a.name}" if f"{origin}.{a.name}" in modules else origin
                     for a in node.names]
        else:
            continue
        found.update(_known(name, modules) for name in names if name.split(".")[0] == ROOT)
    found.discard("")
    return found


def _known(name: str, modules: set[str]) -> str:
    """The longest prefix of `name` that is a module of the tree."""
    parts = name.split(".")
    while parts and ".".join(parts) not in modules:
        parts.pop()
    return ".".join(parts)


def build(src: Path) -> Graph:
    graph = Graph()
    files = sorted((src / ROOT).rglob("*.py"))
    graph.modules = {module_name(path, src) for path in files}
    for path in files:
        module = module_name(path, src)
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for target in imported(tree, module, path.name == "__init__.py", graph.modules):
            graph.add(module, target)
    return graph


def circles(graph: Graph) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan, iterative), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    counter = 0
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.edges.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))
    return sorted(groups)


def arrows_up(graph: Graph) -> list[tuple[str, str]]:
    """Library modules that import the CLI."""
    return sorted((source, target) for source, targets in graph.edges.items()
                  for target in targets if _is_cli(target) and not _is_cli(source))


def _is_cli(module: str) -> bool:
    return module == CLI or module.startswith(f"{CLI}.")


def package(module: str, modules: set[str]) -> str:
    """sm121.X for anything in the package X; BASE for sm121's top-level modules."""
    parts = module.split(".")
    if len(parts) == 1:
        return BASE
    top = ".".join(parts[:2])
    is_package = any(m.startswith(f"{top}.") for m in modules)
    return top.removeprefix(f"{ROOT}.") if is_package else BASE


def package_edges(graph: Graph) -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {}
    for source, targets in graph.edges.items():
        for target in targets:
            a, b = package(source, graph.modules), package(target, graph.modules)
            if a != b:
                edges.setdefault(a, set()).add(b)
    return edges


def floors(graph: Graph) -> list[str]:
    """The longest chain of packages below cli, top first. The package graph is meant to be
    acyclic; `seen` only keeps a circle between packages from recursing forever."""
    edges = package_edges(graph)
    packages = {package(m, graph.modules) for m in graph.modules} - {"cli"}
    best: dict[str, list[str]] = {}

    def chain(name: str, seen: frozenset[str]) -> list[str]:
        if name in best:
            return best[name]
        longest: list[str] = []
        for target in sorted(edges.get(name, set()) - {"cli"} - seen):
            candidate = chain(target, seen | {name})
            if len(candidate) > len(longest):
                longest = candidate
        best[name] = [name, *longest]
        return best[name]

    return max((chain(p, frozenset()) for p in sorted(packages)), key=len, default=[])


def against_layout(graph: Graph) -> list[str]:
    """Package imports that LAYOUT forbids (same floor or above), and packages it omits."""
    packages = {package(m, graph.modules) for m in graph.modules}
    found = [f"{name}: not in the documented layout" for name in sorted(packages - set(LAYOUT))]
    for source, targets in sorted(package_edges(graph).items()):
        found += [f"{source} (floor {LAYOUT[source]}) -> {target} (floor {LAYOUT[target]})"
                  for target in sorted(targets)
                  if source in LAYOUT and target in LAYOUT and LAYOUT[target] >= LAYOUT[source]]
    return found


def report(graph: Graph) -> dict[str, object]:
    chain = floors(graph)
    return {"modules": len(graph.modules),
            "imports": sum(len(t) for t in graph.edges.values()),
            "circles": circles(graph), "arrows_up": [list(a) for a in arrows_up(graph)],
            "floors": len(chain), "floor_chain": chain,
            "against_layout": against_layout(graph)}


def _print(result: dict[str, object]) -> None:
    print(f"{result['modules']} modules, {result['imports']} imports between them")
    groups: Iterable[list[str]] = result["circles"]  # type: ignore[assignment]
    groups = list(groups)
    print(f"circles: {len(groups)}")
    for group in groups:
        print("  " + " <-> ".join(group))
    arrows: list[list[str]] = result["arrows_up"]  # type: ignore[assignment]
    print(f"arrows back up (library -> cli): {len(arrows)}")
    for source, target in arrows:
        print(f"  {source} -> {target}")
    chain: list[str] = result["floor_chain"]  # type: ignore[assignment]
    print(f"floors below cli: {result['floors']}: " + " -> ".join(chain))
    against: list[str] = result["against_layout"]  # type: ignore[assignment]
    print(f"against the documented layout: {len(against)}")
    for line in against:
        print(f"  {line}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", type=Path, default=Path("src"))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    result = report(build(args.src))
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        _print(result)
    return 1 if result["circles"] or result["arrows_up"] or result["against_layout"] else 0


if __name__ == "__main__":
    sys.exit(main())
