"""The engine seam, read from the source with `ast`: outside sm121/engines/ no module imports an
engine package (engines/vllm/, a second engine's folder), names an engine's metric (a string
in its metric namespace, `vllm:...`) or names one of its flags as a literal: `"--nnodes"`,
or a multi-word name bare (`"max-num-seqs"`, how recipes and plans key the engine's args). Plan, launch, gateway, monitor, bench and doctor ask the
engine's adapter (sm121.engines.registry). Inside engines/, only the registry imports the
engine packages, so a second engine is its folder plus one registry entry (docs/engines.md).

The flags and namespaces come from the registered adapters themselves, so a second engine's
facts are guarded the moment it is registered."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import sm121
from sm121.engines.registry import adapter_for, adapters, metric_names

SRC = Path(sm121.__file__).parent
ENGINES = "engines"
REGISTRY = "engines/registry.py"

# sm121's own names that an engine happens to share, where they are sm121's (module prefix,
# literal): the CLI's options (typer declares them; a finding may name serve's --host), and
# an HTTP header the capture redacts, and the agents' own `--model` option in the commands
# `sm121 connect` prints (`aider --model openai/M`, `opencode --model sm121/M`). Nowhere else.
OWN_NAMES = {
    *(("cli/", option) for option in ("--model", "--port", "--host", "--api-key",
                                      "--block-size", "--agent", "--api-key-file",
                                      "--version", "--device", "--timeout")),
    # Options of sm121's own commands declared in their Params (`bench scaling --n`), and
    # docker's own `--device` in the docker run argv.
    *(("bench/", option) for option in ("--n",)),
    ("plan/runtime_argv.py", "--device"),
    ("launch/exposure.py", "--host"),
    ("gateway/capture.py", "api-key"),
    ("connect/agents.py", "--model"),
}


def _modules(root: Path) -> Iterator[tuple[str, ast.Module]]:
    for path in sorted(root.rglob("*.py")):
        yield path.relative_to(root).as_posix(), ast.parse(path.read_text(), str(path))


def _engine_packages(root: Path) -> set[str]:
    """The engine folders: packages directly under engines/."""
    return {p.parent.name for p in (root / ENGINES).glob("*/__init__.py")}


def _imports(tree: ast.Module) -> Iterator[tuple[int, str]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.lineno, node.module
            yield from ((node.lineno, f"{node.module}.{alias.name}") for alias in node.names)


def _strings(tree: ast.Module) -> Iterator[tuple[int, str]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.lineno, node.value


@cache
def _engine_flags() -> frozenset[str]:
    """Every registered engine's flags, from each bundled list it ships."""
    names: set[str] = set()
    for adapter in adapters():
        for version in adapter.bundled_versions():
            names |= adapter.bundled_flags(version).flags
    return frozenset(names)


def _names_a_flag(text: str, flags: frozenset[str]) -> bool:
    if text.startswith("--"):
        return text[2:] in flags
    if text.startswith("-") and len(text) > 2:
        # A short option of two letters or more (llama.cpp's -np, -ctk, -ngl); a one-letter
        # one (`-c`) is every program's (`sh -c`, `python -c`).
        return text[1:] in flags
    return "-" in text and text in flags  # a one-word name ("model") is plain English too


def _own(module: str, text: str) -> bool:
    return any(module.startswith(prefix) and text == name for prefix, name in OWN_NAMES)


def import_violations(root: Path) -> list[str]:
    packages = _engine_packages(root) or {"vllm"}
    found = []
    for module, tree in _modules(root):
        inside = module.startswith(f"{ENGINES}/")
        if inside and (module == REGISTRY or module.split("/")[1] in packages):
            continue  # the registry, and an engine package's own modules
        for line, name in _imports(tree):
            parts = name.split(".")
            if parts[:2] == ["sm121", ENGINES] and len(parts) > 2 and (
                    parts[2] in packages or parts[2].startswith("vllm")):
                found.append(f"{module}:{line} imports {name}")
        # A module path as text (`python -m sm121.engines.vllm...` in an argv) is an import too.
        found += [f"{module}:{line} names the module {text}" for line, text in _strings(tree)
                  if any(text.startswith(f"sm121.{ENGINES}.{p}") for p in (*packages, "vllm"))]
    return sorted(set(found))


def metric_violations(root: Path) -> list[str]:
    namespaces = metric_names().namespaces
    return [f"{module}:{line} names the metric {text!r}"
            for module, tree in _modules(root) if not module.startswith(f"{ENGINES}/")
            for line, text in _strings(tree) if any(_names_namespace(text, ns) for ns in namespaces)]


def _names_namespace(text: str, namespace: str) -> bool:
    """`llamacpp:requests_deferred` names a metric; `tiny-llamacpp:agent` (a RECIPE:PROFILE)
    does not: the namespace starts a word."""
    return re.search(rf"(?<![\w-]){re.escape(namespace)}", text) is not None


def flag_violations(root: Path) -> list[str]:
    flags = _engine_flags()
    return [f"{module}:{line} names the engine flag {text!r}"
            for module, tree in _modules(root) if not module.startswith(f"{ENGINES}/")
            for line, text in _strings(tree)
            if _names_a_flag(text, flags) and not _own(module, text)]


def test_no_module_outside_engines_imports_an_engine_package() -> None:
    assert import_violations(SRC) == []


def test_no_module_outside_engines_names_an_engine_metric() -> None:
    assert metric_violations(SRC) == []


def test_no_module_outside_engines_names_an_engine_flag() -> None:
    assert flag_violations(SRC) == []


def test_the_walk_sees_what_it_guards() -> None:
    """The walker is not blind: the engine package itself names its flags and metrics."""
    assert _engine_packages(SRC) == {"vllm", "llamacpp"}
    assert {"max-num-seqs", "nnodes", "kv-unified", "np", "ctk", "cache-reuse"} <= _engine_flags()
    engine_strings = {text for module, tree in _modules(SRC / ENGINES / "vllm")
                      for _, text in _strings(tree)}
    assert "vllm:kv_cache_usage_perc" in engine_strings and "--nnodes" in engine_strings
    llamacpp = {text for module, tree in _modules(SRC / ENGINES / "llamacpp")
                for _, text in _strings(tree)}
    assert "llamacpp:prompt_tokens_total" in llamacpp and "--metrics" in llamacpp


def test_a_llamacpp_flag_or_metric_outside_engines_fails(tmp_path: Path) -> None:
    """The guard holds for the second engine: a module outside engines/ that spells one of
    llama.cpp's flags (long or multi-letter short) or names a llamacpp: metric is caught."""
    (tmp_path / "gateway").mkdir()
    (tmp_path / "gateway" / "bad.py").write_text(
        'ARGV = ["--kv-unified", "-np", "4", "-ctk", "q8_0"]\n'
        'NAME = "cache-reuse"\nMETRIC = "llamacpp:requests_deferred"\n')
    flags = flag_violations(tmp_path)
    assert {f.split("flag ")[1] for f in flags} == {"'--kv-unified'", "'-np'", "'-ctk'",
                                                     "'cache-reuse'"}
    assert metric_violations(tmp_path) == [
        "gateway/bad.py:3 names the metric 'llamacpp:requests_deferred'"]


def test_every_engine_kind_with_an_adapter_is_one_registry_entry() -> None:
    """A second engine is its folder plus one line in the registry: only the registry, among
    engines/' own modules, imports an engine package."""
    packages = _engine_packages(SRC)
    top = [m for m, _ in _modules(SRC / ENGINES) if "/" not in m and m != "registry.py"]
    for module in top:
        tree = ast.parse((SRC / ENGINES / module).read_text())
        names = [name for _, name in _imports(tree)]
        assert not [n for n in names if n.startswith("sm121.engines.")
                    and n.split(".")[2] in packages], module
    assert all(adapter_for(adapter.kind) is adapter for adapter in adapters())
