"""vLLM's `serve` argument parser, to read a rendered argv as the engine will: the installed
vLLM's own parser where that vLLM is the release the recipe is checked against, else a model
of it built from bundled data (engines/data/vllm-parser-VERSION.json, written from the
installed parser by `python -m sm121.engines.vllm.parser > ...`).

Both answer the same question: which destinations (argparse `dest`) an argv sets, and to
what. The model follows argparse 3.11 as vLLM's FlexibleArgumentParser drives it: exact
option, then `--name=value`, then abbreviations (allow_abbrev), `_` read as `-`, and `--a.b`
read as a key of the JSON flag `a`. Where it cannot tell what the engine would do, it says
so, and the caller refuses (fails closed)."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

# Options that make the parser read a file or print and exit instead of parsing.
_NEVER_PARSED = ("config", "help")
_NEGATIVE = re.compile(r"^-\d+$|^-\d*\.\d+$")


@dataclass(frozen=True)
class Parsed:
    values: dict[str, Any]  # dest -> value, for every dest the parser knows
    error: str | None = None  # the parser refused the argv (the engine would not start)
    via: str = ""  # "vLLM 0.32.0's parser" or "the bundled model of vLLM 0.32.0's parser"


# --- the installed vLLM ----------------------------------------------------------------------

def installed_release() -> str | None:
    """The installed vLLM's release, read from its _version.py without importing it (an
    import takes 10-30 s)."""
    spec = importlib.util.find_spec("vllm")
    if spec is None or spec.origin is None:
        return None
    version_file = Path(spec.origin).parent / "_version.py"
    try:
        text = version_file.read_text()
    except OSError:
        return None
    match = re.search(r"""__version__\s*=\s*(?:version\s*=\s*)?['"](\d+\.\d+\.\d+)""", text)
    return match.group(1) if match else None


@cache
def _real_parser() -> Any:
    from vllm.entrypoints.launchers.cli_args import make_arg_parser
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    return make_arg_parser(FlexibleArgumentParser(prog="vllm serve"))


def _parse_real(tokens: list[str], release: str) -> Parsed:
    parser = _real_parser()
    via = f"vLLM {release}'s own parser"
    blocked = _blocked_real(parser, tokens)
    if blocked:
        return Parsed({}, blocked, via)
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            namespace = parser.parse_args(list(tokens))
    except (SystemExit, ValueError, TypeError) as exc:
        message = err.getvalue().strip().splitlines()
        return Parsed({}, message[-1] if message else f"{type(exc).__name__}: {exc}", via)
    return Parsed(vars(namespace), None, via)


def _blocked_real(parser: Any, tokens: list[str]) -> str | None:
    """An option that reads a file (--config) or prints and exits (--help), found the way the
    parser itself resolves options, before it is asked to parse."""
    for token in tokens:
        if not token.startswith("--"):
            continue
        key = token.split("=", 1)[0].split(".", 1)[0].replace("_", "-")
        try:
            with contextlib.redirect_stderr(io.StringIO()):
                found = parser._parse_optional(key)
        except SystemExit:
            return f"{key} is ambiguous"
        if found and found[0] is not None and found[0].dest in _NEVER_PARSED:
            return f"{token.split('=', 1)[0]} ({found[0].dest}) is never parsed here"
    return None


# --- the bundled model -----------------------------------------------------------------------

@dataclass(frozen=True)
class Action:
    dest: str
    nargs: str  # "0" (a flag), "1", "?", "+", "append"


@dataclass(frozen=True)
class ParserModel:
    version: str
    options: dict[str, Action]  # "--name" -> action

    def resolve(self, option: str) -> tuple[Action | None, str | None]:
        """(action, error) for `--name`: exact, else every option it abbreviates."""
        if option in self.options:
            return self.options[option], None
        matches = {o: a for o, a in self.options.items() if o.startswith(option)}
        if len(matches) == 1:
            return next(iter(matches.values())), None
        if matches:
            return None, f"ambiguous option {option}: {', '.join(sorted(matches)[:4])}"
        return None, None


def model_for(version: str, names: frozenset[str]) -> ParserModel:
    """The bundled model of that version, else one built from its flag list (each flag's
    arity from the newest bundled model; a flag that model lacks has unknown arity)."""
    if version in bundled_models():
        return _bundled_model(version)
    base = _bundled_model(bundled_models()[-1])
    options = {}
    for name in names:
        option = f"--{name}"
        options[option] = base.options.get(option) or Action(
            name.removeprefix("no-").replace("-", "_"), "unknown")
    return ParserModel(version, options)


@cache
def bundled_models() -> tuple[str, ...]:
    data = resources.files("sm121.engines").joinpath("data")
    found = [m.group(1) for entry in data.iterdir()
             if (m := re.match(r"^vllm-parser-(\d+\.\d+\.\d+)\.json$", entry.name))]
    return tuple(sorted(found, key=lambda v: tuple(int(p) for p in v.split("."))))


@cache
def _bundled_model(version: str) -> ParserModel:
    text = resources.files("sm121.engines").joinpath(f"data/vllm-parser-{version}.json").read_text()
    data = json.loads(text)
    options = {option: Action(entry["dest"], str(entry["nargs"]))
               for entry in data["actions"] for option in entry["options"]}
    return ParserModel(data["version"], options)


def parse_model(model: ParserModel, tokens: list[str]) -> Parsed:
    via = f"the bundled model of vLLM {model.version}'s parser"
    values: dict[str, Any] = {}
    index, positionals = 0, 0
    while index < len(tokens):
        token = tokens[index]
        index += 1
        if not token.startswith("-") or _NEGATIVE.match(token):
            if index != 1 or positionals:  # argparse takes the optional model only first
                return Parsed({}, f"unrecognized argument {token!r}", via)
            positionals += 1
            values["model_tag"] = token
            continue
        if not token.startswith("--"):
            return Parsed({}, f"{token!r}: short options are not modelled", via)
        key, has_value, explicit = token.partition("=")
        if "." in key:
            return Parsed({}, f"{key}: a dotted JSON key is not modelled", via)
        key = key.replace("_", "-")
        action, error = model.resolve(key)
        if error:
            return Parsed({}, error, via)
        if action is None:
            if " " in token:  # argparse reads a spaced unknown option as a positional
                return Parsed({}, f"{token!r} would be read as a positional", via)
            return Parsed({}, f"unrecognized option {key}", via)
        if action.dest in _NEVER_PARSED:
            return Parsed({}, f"{key} ({action.dest}) is never parsed here", via)
        if action.nargs == "0":
            if has_value:
                return Parsed({}, f"{key} takes no value", via)
            values[action.dest] = key  # which form (--x / --no-x) was given last
            continue
        taken: list[str] = [explicit] if has_value else []
        while not has_value and index < len(tokens) and not tokens[index].startswith("-"):
            taken.append(tokens[index])
            index += 1
            if action.nargs != "+":
                break
        if action.nargs == "unknown" and not has_value:
            return Parsed({}, f"{key}: its arity is not known, so its value cannot be told", via)
        if not taken and action.nargs != "?":
            return Parsed({}, f"{key} expects a value", via)
        if action.nargs == "append":
            values.setdefault(action.dest, []).extend(taken)
        else:
            values[action.dest] = taken if action.nargs == "+" else (taken[0] if taken else None)
    return Parsed(values, None, via)


def parse(tokens: list[str], release: str, names: frozenset[str]) -> Parsed:
    """Read an engine argv (what follows the engine command) as the engine of `release` does:
    with its own parser when that release is installed here, else with the model (`names`:
    the flag list the recipe is checked against, for a release without a bundled model)."""
    if installed_release() == release:
        try:
            _real_parser()
        except Exception:  # an install that does not import (a broken build): use the model
            pass
        else:
            return _parse_real(tokens, release)
    return parse_model(model_for(release, names), tokens)


# --- writing the bundled model from the installed vLLM ---------------------------------------

def _nargs(action: Any) -> str:
    if type(action).__name__ == "_AppendAction":
        return "append"
    if action.nargs == 0:
        return "0"
    return "1" if action.nargs is None else str(action.nargs)


def _model_from_installed() -> dict[str, Any]:
    from vllm import __version__

    actions = [{"options": sorted(o for o in action.option_strings if o.startswith("--")),
                "dest": action.dest, "nargs": _nargs(action)}
               for action in _real_parser()._actions if action.option_strings]
    return {"version": __version__.split("+")[0], "source": "the installed vLLM's parser "
            "(python -m sm121.engines.vllm.parser)",
            "actions": sorted((a for a in actions if a["options"]), key=lambda a: a["dest"])}


if __name__ == "__main__":
    model = _model_from_installed()
    head = {k: v for k, v in model.items() if k != "actions"}
    print(json.dumps(head)[:-1] + ', "actions": [\n'
          + ",\n".join(json.dumps(a) for a in model["actions"]) + "\n]}")
