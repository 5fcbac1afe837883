"""House rules that a reviewer cannot see in one diff, checked on the source with `ast`:

- no module imports another module's private names (`from sm121.x import _y`, or
  `x._y` on an imported sm121 module): what a peer needs is public API of its owner;
- every exception class of sm121 is an `Sm121Error` (sm121.errors): one hierarchy, so a
  caller can tell sm121's own errors from everything else.

Function-level imports count as much as module-level ones."""

from __future__ import annotations

import ast
import builtins
from dataclasses import dataclass, field
from pathlib import Path

import sm121

SRC = Path(sm121.__file__).resolve().parent
ROOT = "sm121.errors.Sm121Error"
BUILTIN_EXCEPTIONS = {name for name, value in vars(builtins).items()
                      if isinstance(value, type) and issubclass(value, BaseException)}


@dataclass
class Module:
    name: str
    tree: ast.Module
    is_package: bool
    # local name -> what it stands for ("sm121.launch.local", "sm121.errors.Sm121Error")
    names: dict[str, str] = field(default_factory=dict)


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _absolute(module: str, node: ast.ImportFrom, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")
    base = base if is_package else base[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def load_modules() -> dict[str, Module]:
    modules = {}
    for path in sorted(SRC.rglob("*.py")):
        name = _module_name(path)
        module = Module(name, ast.parse(path.read_text(), str(path)), path.name == "__init__.py")
        for node in ast.walk(module.tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    module.names[alias.asname or alias.name.split(".")[0]] = (
                        alias.name if alias.asname else alias.name.split(".")[0])
            elif isinstance(node, ast.ImportFrom):
                source = _absolute(name, node, module.is_package)
                for alias in node.names:
                    module.names[alias.asname or alias.name] = f"{source}.{alias.name}"
        modules[name] = module
    return modules


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_imports(modules: dict[str, Module]) -> list[str]:
    """`where: what` for each private name one sm121 module takes from another."""
    found = []
    for module in modules.values():
        for node in ast.walk(module.tree):
            if isinstance(node, ast.ImportFrom):
                source = _absolute(module.name, node, module.is_package)
                if source.startswith("sm121") and source != module.name:
                    found += [f"{module.name}:{node.lineno}: from {source} import {a.name}"
                              for a in node.names
                              if _private(a.name) or any(map(_private, source.split(".")))]
            elif isinstance(node, ast.Import):
                found += [f"{module.name}:{node.lineno}: import {a.name}" for a in node.names
                          if a.name.startswith("sm121")
                          and any(map(_private, a.name.split(".")))]
            elif (isinstance(node, ast.Attribute) and _private(node.attr)
                  and isinstance(node.value, ast.Name)):
                target = module.names.get(node.value.id, "")
                if target in modules and target != module.name:
                    found.append(f"{module.name}:{node.lineno}: {node.value.id}.{node.attr}")
    return found


def exception_classes(modules: dict[str, Module]) -> dict[str, list[str]]:
    """Every class of sm121 that is an exception: qualified name -> its base chain's
    qualified names, as far as they resolve (a builtin ends a chain)."""
    bases: dict[str, list[str]] = {}
    for module in modules.values():
        for node in ast.walk(module.tree):
            if isinstance(node, ast.ClassDef):
                bases[f"{module.name}.{node.name}"] = [_resolve(module, b) for b in node.bases]

    def chain(name: str, seen: frozenset[str] = frozenset()) -> list[str]:
        if name in seen or name not in bases:
            return [name]
        return [name] + [c for base in bases[name] for c in chain(base, seen | {name})]

    return {name: chain(name)[1:] for name in bases
            if any(c in BUILTIN_EXCEPTIONS or c == ROOT for c in chain(name)[1:])}


def _resolve(module: Module, base: ast.expr) -> str:
    if isinstance(base, ast.Name):
        if base.id in module.names:
            return module.names[base.id]
        local = f"{module.name}.{base.id}"
        return base.id if base.id in BUILTIN_EXCEPTIONS else local
    if isinstance(base, ast.Attribute) and isinstance(base.value, ast.Name):
        return f"{module.names.get(base.value.id, base.value.id)}.{base.attr}"
    return ast.unparse(base)


def test_no_module_imports_another_modules_private_names() -> None:
    assert private_imports(load_modules()) == []


def test_every_exception_class_is_an_sm121_error() -> None:
    outside = {name: chain for name, chain in exception_classes(load_modules()).items()
               if name != ROOT and ROOT not in chain}
    assert outside == {}


def test_the_walk_sees_what_it_checks() -> None:
    """The walk finds the hierarchy's root and its subclasses, so an empty answer above is
    not a walk that found nothing."""
    classes = exception_classes(load_modules())
    assert ROOT in classes
    assert len([n for n, chain in classes.items() if ROOT in chain]) >= 10
