#!/usr/bin/env python3
"""The long options of `vllm serve`, derived from vLLM's source TEXT (no import, no engine).

Use it for a vLLM that cannot be imported here (a GPU build, another Python):

    python scripts/vllm_args_from_source.py SRC_ROOT VERSION > src/sm121/engines/data/vllm-args-VERSION.txt

SRC_ROOT holds the `vllm/` package (an unpacked wheel or a checkout). What it reads, the way
vLLM's own parser is built:
- every `add_argument("--flag", ...)` in vllm/engine/arg_utils.py and in the OpenAI server's
  cli_args.py (vllm/entrypoints/openai/ or vllm/entrypoints/launchers/);
- the fields of the frontend dataclasses there (FrontendArgs and its bases): one flag each;
- the `--no-X` twin argparse.BooleanOptionalAction adds: an explicit action, or a field whose
  annotation holds `bool` (not `bool | str | None`, which vLLM makes an optional-valued flag),
  found in the config dataclass the `**X_kwargs["field"]` comes from;
- argparse's own `--help`.
It is checked against the parser-read list of 0.32 (tests/unit/test_vllm_flags.py).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

BOOL_ACTION = "BooleanOptionalAction"


def derive(root: Path) -> list[str]:
    arg_utils = root / "vllm/engine/arg_utils.py"
    cli_args = _cli_args(root)
    fields = _config_fields(root)
    names = {"help"}
    for path in (arg_utils, cli_args):
        tree = ast.parse(path.read_text())
        names |= _explicit_flags(tree, _kwargs_sources(tree), fields)
    names |= _frontend_flags(ast.parse(cli_args.read_text()), fields)
    return sorted(names)


def _cli_args(root: Path) -> Path:
    for sub in ("entrypoints/openai/cli_args.py", "entrypoints/launchers/cli_args.py"):
        if (root / "vllm" / sub).is_file():
            return root / "vllm" / sub
    raise SystemExit(f"no OpenAI server cli_args.py under {root}/vllm/entrypoints")


def _config_fields(root: Path) -> dict[str, dict[str, ast.expr]]:
    """class name -> field name -> annotation, for every class in the vllm package, with the
    fields of its (same-package) base classes."""
    classes: dict[str, tuple[list[str], dict[str, ast.expr]]] = {}
    # The config dataclasses live in vllm/config; the frontend ones beside the server.
    files = [p for sub in ("config", "engine", "entrypoints")
             for p in sorted((root / "vllm" / sub).rglob("*.py"))]
    for path in files:
        try:
            tree = ast.parse(path.read_text())
        except (SyntaxError, UnicodeDecodeError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and node.name not in classes:
                own = {s.target.id: s.annotation for s in node.body
                       if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)}
                bases = [b.id for b in node.bases if isinstance(b, ast.Name)]
                classes[node.name] = (bases, own)

    def resolved(name: str, seen: frozenset[str] = frozenset()) -> dict[str, ast.expr]:
        if name not in classes or name in seen:
            return {}
        bases, own = classes[name]
        merged: dict[str, ast.expr] = {}
        for base in bases:
            merged.update(resolved(base, seen | {name}))
        merged.update(own)
        return merged

    return {name: resolved(name) for name in classes}


def _kwargs_sources(tree: ast.Module) -> dict[str, str]:
    """`model_kwargs = get_kwargs(ModelConfig)` -> {"model_kwargs": "ModelConfig"}."""
    sources = {}
    for node in ast.walk(tree):
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name) and isinstance(node.value, ast.Call)
                and _call_name(node.value) == "get_kwargs" and node.value.args
                and isinstance(node.value.args[0], ast.Name)):
            sources[node.targets[0].id] = node.value.args[0].id
    return sources


def _explicit_flags(tree: ast.Module, sources: dict[str, str],
                    fields: dict[str, dict[str, ast.expr]]) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and _call_name(node) == "add_argument"):
            continue
        longs = [a.value[2:] for a in node.args
                 if isinstance(a, ast.Constant) and isinstance(a.value, str)
                 and a.value.startswith("--")]
        if not longs:
            continue
        names.update(longs)
        if _has_bool_action(node, sources, fields):
            names.update(f"no-{name}" for name in longs)
    return names


def _has_bool_action(call: ast.Call, sources: dict[str, str],
                     fields: dict[str, dict[str, ast.expr]]) -> bool:
    for keyword in call.keywords:
        if keyword.arg == "action":
            return BOOL_ACTION in ast.unparse(keyword.value)
    for keyword in call.keywords:
        if keyword.arg is None and (field := _kwargs_field(keyword.value)):
            cls = sources.get(field[0], "")
            annotation = fields.get(cls, {}).get(field[1])
            return annotation is not None and _is_bool_optional(annotation)
    return False


def _kwargs_field(value: ast.expr) -> tuple[str, str] | None:
    """`**model_kwargs["x"]` or `**{**model_kwargs["x"], "default": None}` -> (model_kwargs, x)."""
    if isinstance(value, ast.Dict):
        for key, item in zip(value.keys, value.values, strict=True):
            if key is None and (found := _kwargs_field(item)):
                return found
        return None
    if (isinstance(value, ast.Subscript) and isinstance(value.value, ast.Name)
            and isinstance(value.slice, ast.Constant)):
        return value.value.id, str(value.slice.value)
    return None


def _frontend_flags(tree: ast.Module, fields: dict[str, dict[str, ast.expr]]) -> set[str]:
    names: set[str] = set()
    frontends = [n.name for n in ast.walk(tree)
                 if isinstance(n, ast.ClassDef) and n.name.endswith("FrontendArgs")]
    for cls in frontends:
        for field, annotation in fields.get(cls, {}).items():
            flag = field.replace("_", "-")
            names.add(flag)
            if _is_bool_optional(annotation):
                names.add(f"no-{flag}")
    return names


def _is_bool_optional(annotation: ast.expr) -> bool:
    """vLLM's rule (arg_utils._compute_kwargs): a bool in the type makes --X/--no-X, except
    exactly `bool | str | None`, an optional-valued flag."""
    words = {n.id for n in ast.walk(annotation) if isinstance(n, ast.Name)}
    words |= {str(n.value) for n in ast.walk(annotation) if isinstance(n, ast.Constant)
              and n.value is None}
    if "Literal" in words:
        return False
    return "bool" in words and words != {"bool", "str", "None"}


def _call_name(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(
        func, ast.Name) else ""


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    flags = derive(Path(sys.argv[1]))
    print(f"# vllm {sys.argv[2]}: the long options of `vllm serve`, derived from the source "
          "text\n# by scripts/vllm_args_from_source.py (not read from a running parser)")
    print("\n".join(flags))
