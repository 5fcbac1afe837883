"""What a foreign llama.cpp recipe may set without --trust: an allow-list of flags (by key,
each with a typed value) and of env vars; and the check of the rendered argv as llama-server's
own parser reads it (common/arg.cpp: every token is a spelling from `--help` followed by as
many values as its entry takes; an unknown token is a fatal error there), compared with
sm121's own argv. Everything else needs --trust: a path, a host, a URL, a file to load, the
server's tools and props endpoints, the log and slot-save files."""

from __future__ import annotations

import re
from dataclasses import dataclass

from sm121.engines.llamacpp import flags as _flags
from sm121.recipes.schema import ArgValue

WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:+-]{0,127}")
# llama.cpp's KV cache types (common/arg.cpp kv_cache_types).
CACHE_TYPES = ("f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1")


@dataclass(frozen=True)
class Rule:
    kind: str  # "bool", "int", "number", "choice", "word"
    low: float | None = None
    choices: tuple[str, ...] = ()


def _ints(low: float, *keys: str) -> dict[str, Rule]:
    return {k: Rule("int", low=low) for k in keys}


# Scheduling, memory, caching, threads, sampling defaults, chat-template switches: none names a
# file, a host, a URL or code to load.
SAFE: dict[str, Rule] = {
    **{k: Rule("bool") for k in (
        "kvu", "jinja", "cb", "swa-full", "cmoe", "context-shift",
        "cache-prompt", "warmup", "kvo", "cache-idle-slots", "perf")},
    **_ints(-1, "np", "ngl", "n", "s", "cram"),
    **_ints(0, "c", "cache-reuse", "ncmoe", "ctxcp", "keep", "to", "reasoning-budget",
            "draft", "draft-min", "spec-draft-n-max", "spec-draft-n-min", "mg",
            "sleep-idle-seconds"),
    **_ints(1, "b", "ub", "t", "tb", "threads-http"),
    "ctk": Rule("choice", choices=CACHE_TYPES),
    "ctv": Rule("choice", choices=CACHE_TYPES),
    "fa": Rule("choice", choices=("on", "off", "auto")),
    "rea": Rule("choice", choices=("on", "off", "auto")),
    "reasoning-format": Rule("choice", choices=("none", "deepseek", "deepseek-legacy", "auto")),
    "sm": Rule("choice", choices=("none", "layer", "row", "tensor")),
    "spec-type": Rule("word"),
    "chat-template": Rule("word"),  # a built-in template's name (a file is chat-template-file)
    "temp": Rule("number", low=0), "top-k": Rule("int", low=0),
    "top-p": Rule("number", low=0), "min-p": Rule("number", low=0),
}

WHY: dict[str, str] = {
    "m": "loads the model file it names", "hf": "downloads what it names",
    "chat-template-file": "reads a file of the launching machine's choosing",
    "lora": "loads an adapter file", "mm": "loads a projector file",
    "slot-save-path": "writes KV caches to a folder",
    "log-file": "writes a file", "path": "serves a folder's files over HTTP",
    "props": "lets any client change the server's settings (POST /props)",
    "tools": "lets the model run the server's built-in tools (files, shell)",
    "api-prefix": "moves every route away from where sm121 reads them",
    "models-dir": "turns on router mode over a folder of models",
    "ot": "places tensors by regex (a value sm121 cannot check)",
}

# Env vars a foreign recipe may set: the LLAMA_ARG_* of an allow-listed flag (llama-server
# reads those as the flag itself), and a few of the process's own.
_PLAIN_ENV = {"OMP_NUM_THREADS", "CUDA_VISIBLE_DEVICES", "GGML_CUDA_ENABLE_UNIFIED_MEMORY"}
ENV_SECRETS = frozenset({"LLAMA_API_KEY", "HF_TOKEN"})
_HOW = "needs --trust"


def value_problem(name: str, value: ArgValue) -> str | None:
    rule = SAFE[name]
    if value is None:
        return None
    if rule.kind == "bool":
        return None if isinstance(value, bool) else "takes a YAML boolean (true or false)"
    if rule.kind in ("int", "number"):
        ok = isinstance(value, int) if rule.kind == "int" else isinstance(value, int | float)
        if not ok or isinstance(value, bool | str):
            return f"takes a YAML {'integer' if rule.kind == 'int' else 'number'}"
        return None if rule.low is None or value >= rule.low else f"takes {rule.low:g} or more"
    if not isinstance(value, str):
        return "takes a string"
    if rule.choices:
        return None if value in rule.choices else f"takes one of {', '.join(rule.choices)}"
    return None if WORD.fullmatch(value) else f"takes a word matching {WORD.pattern}"


def env_problem(name: str, value: str, secret: bool, book: _flags.HelpBook) -> str | None:
    if secret:
        return None if name in ENV_SECRETS else (
            f"hands the engine this machine's secret {name} (allowed: "
            f"{', '.join(sorted(ENV_SECRETS))}); {_HOW}")
    shown = value if len(value) <= 80 else value[:77] + "..."
    if "$" in value:
        return f"value {shown!r} refers to a variable of the launching machine; {_HOW}"
    option = book.by_env.get(name)
    if option is not None:
        if option.key not in SAFE:
            return f"sets llama-server's {option.flag} ({WHY.get(option.key, 'not allow-listed')}); {_HOW}"
        return None if WORD.fullmatch(value) else f"takes a word, got {shown!r}; {_HOW}"
    if name in _PLAIN_ENV and WORD.fullmatch(value.replace(",", "")):
        return None
    return f"is not an allow-listed variable (value {shown!r}); {_HOW}"


def parse_argv(argv: list[str], book: _flags.HelpBook) -> tuple[dict[str, list[str]], str | None]:
    """The argv as llama-server reads it: {option key: [values, ...] per occurrence joined}.
    An unknown token, or a missing value, is the error llama.cpp would stop on."""
    seen: dict[str, list[str]] = {}
    i = 0
    while i < len(argv):
        token = argv[i]
        option = book.by_spelling.get(token)
        if option is None:
            return seen, f"unknown argument {token!r}"
        values = argv[i + 1:i + 1 + option.values]
        if len(values) < option.values:
            return seen, f"{token} needs {option.values} value(s)"
        negative = token in option.negatives
        seen[option.key] = ["off"] if negative else values or ["on"]
        i += 1 + option.values
    return seen, None


def argv_problems(full: list[str], own: list[str], book: _flags.HelpBook) -> list[str]:
    """Every option whose value the rendered argv changes from sm121's own, and that is not
    allow-listed, needs --trust; an argv llama-server would refuse cannot be vouched for."""
    parsed, error = parse_argv(full, book)
    if error:
        return [f"llama-server {book.version} would not accept the rendered argv ({error}), "
                "so it cannot be checked"]
    baseline, error = parse_argv(own, book)
    if error:
        return [f"llama-server {book.version} would not accept sm121's own argv ({error})"]
    return [f"the rendered argv sets {book.options[key].flag} (llama-server {book.version}), "
            "which needs --trust"
            for key, values in sorted(parsed.items())
            if values != baseline.get(key) and key not in SAFE]
