"""What a recipe that is not built in may set on vLLM without --trust: an allow-list of flags
known to be safe, each with a typed value, and of environment variables. Everything else
needs --trust (plan/trust.py lists it). And the check on the rendered result: the argv parsed
as vLLM parses it (engines/vllm/parser.py) must differ from sm121's own argv only in
allow-listed destinations. That last check is what keeps the allow-list safe against a
trick it did not foresee (an abbreviation, a value read as an option, a new flag)."""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from sm121.engines.vllm import env_names
from sm121.engines.vllm import parser as vllm_parser
from sm121.recipes.schema import ArgValue

# A string value: a word that never starts with `-` (it can never become an option).
WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:+-]{0,127}")
# A Hugging Face id (ORG/NAME): no leading `/`, no `..` (never a path outside the folder).
HF_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,95}(/[A-Za-z0-9][A-Za-z0-9_.-]{0,95})?")


@dataclass(frozen=True)
class FlagRule:
    kind: str  # "bool", "int", "number", "str", "json"
    pattern: re.Pattern[str] | None = None
    choices: tuple[str, ...] = ()
    low: float | None = None
    high: float | None = None
    json_keys: Mapping[str, str] | None = None  # key -> "bool" | "word"


def _bool() -> FlagRule:
    return FlagRule("bool")


def _int(low: float = 0, high: float | None = None) -> FlagRule:
    return FlagRule("int", low=low, high=high)


def _choice(*choices: str) -> FlagRule:
    return FlagRule("str", choices=choices)


# Tuning flags: scheduling, memory, caching, parsers by registered name, logging levels.
# None of them names a file, a host, a class or code to load.
SAFE_FLAGS: dict[str, FlagRule] = {
    **{name: _bool() for name in (
        "enable-prefix-caching", "enable-prompt-tokens-details", "enable-auto-tool-choice",
        "enforce-eager", "enable-chunked-prefill", "disable-log-stats", "disable-log-requests",
        "enable-log-requests", "disable-sliding-window", "disable-cascade-attn",
        "async-scheduling", "disable-custom-all-reduce", "enable-expert-parallel",
        "long-prefill-token-threshold-adaptive", "enable-force-include-usage",
        "enable-server-load-tracking", "disable-uvicorn-access-log",
        "exclude-tools-when-tool-choice-none", "return-tokens-as-token-ids",
        "disable-hybrid-kv-cache-manager", "kv-cache-metrics", "cudagraph-metrics",
        "language-model-only", "skip-mm-profiling", "disable-chunked-mm-input",
        "enable-log-outputs")},
    **{name: _int(1) for name in (
        "max-model-len", "max-num-batched-tokens", "max-num-seqs", "max-num-active-seqs",
        "max-num-queued-reqs", "max-num-queued-tokens", "block-size", "stream-interval",
        "max-cudagraph-capture-size", "num-gpu-blocks-override", "max-num-partial-prefills",
        "max-long-partial-prefills", "max-parallel-loading-workers")},
    **{name: _int(0) for name in (
        "long-prefill-token-threshold", "seed", "max-logprobs", "sse-keep-alive-interval",
        "max-log-len")},
    "gpu-memory-utilization": FlagRule("number", low=0.01, high=1.0),
    "cpu-offload-gb": FlagRule("number", low=0, high=4096),
    "swap-space": FlagRule("number", low=0, high=4096),
    **{name: FlagRule("str", pattern=WORD) for name in (
        "tokenizer-mode", "tool-call-parser", "reasoning-parser", "load-format",
        "quantization", "kv-cache-dtype", "attention-backend", "tokenizer-revision")},
    "tokenizer": FlagRule("str", pattern=HF_ID),
    "dtype": _choice("auto", "bfloat16", "float", "float16", "float32", "half"),
    "scheduling-policy": _choice("fcfs", "priority"),
    "generation-config": _choice("auto", "vllm"),  # else a folder to read
    "uvicorn-log-level": _choice("critical", "debug", "error", "info", "trace", "warning"),
    "chat-template-content-format": _choice("auto", "openai", "string"),
    "prefix-caching-hash-algo": _choice("sha256", "sha256_cbor", "xxhash", "xxhash_cbor"),
    "performance-mode": _choice("balanced", "interactivity", "throughput"),
    "structured-outputs-config": FlagRule("json", json_keys={
        "backend": "word", "disable_any_whitespace": "bool",
        "disable_additional_properties": "bool", "enable_in_reasoning": "bool"}),
}
SAFE_DESTS = frozenset(name.replace("-", "_") for name in SAFE_FLAGS)

# Why the best-known trust-only flags need trust: named in `sm121 plan`'s list.
WHY: dict[str, str] = {
    "trust-remote-code": "runs the model repository's Python code",
    "middleware": "imports a Python object into the API server",
    "worker-cls": "imports a Python class as the worker",
    "worker-extension-cls": "imports a Python class into the worker",
    "scheduler-cls": "imports a Python class as the scheduler",
    "tool-parser-plugin": "imports a Python file", "reasoning-parser-plugin": "imports a Python file",
    "io-processor-plugin": "loads a plugin", "logits-processors": "imports Python classes",
    "allowed-local-media-path": "lets requests read local files",
    "chat-template": "reads a file as the chat template",
    "config": "reads more options from a file", "download-dir": "writes weights to a folder",
    "kv-transfer-config": "loads a connector class", "host": "sets where the engine listens",
    "port": "sets the engine's port", "api-key": "puts a secret on the command line",
    "ssl-keyfile": "reads a key file", "lora-modules": "loads adapters from paths",
    "hf-config-path": "reads a config folder", "tool-server": "connects to a tool server",
}

# Environment variables: the reviewed allow-list of names, each with its kind of value
# (engines/vllm/env_names.py); every other name needs --trust.
# A secret-named entry hands the engine the launcher's variable of that name: only the listed
# secrets, which the engine needs (gated weights from huggingface.co, the API key it checks).
ENV_SECRETS = frozenset(n for n, rule in env_names.ALLOWED.items()
                        if rule.kind is env_names.EnvKind.SECRET)
_HOW = "needs --trust (or, once reviewed, a line in engines/vllm/env_names.py)"


def env_problem(name: str, value: str, secret: bool) -> str | None:
    """Why a recipe's env entry needs --trust, or None; the text names the value (a secret's
    never: the plan passes the launcher's variable of that name, so only its name counts)."""
    rule = env_names.ALLOWED.get(name)
    if secret:
        if name in ENV_SECRETS:
            return None
        return (f"hands the engine this machine's secret {name} (allowed: "
                f"{', '.join(sorted(ENV_SECRETS))}); {_HOW}")
    shown = value if len(value) <= 80 else value[:77] + "..."
    if "$" in value:
        return (f"value {shown!r} refers to a variable of the launching machine ($NAME), which "
                f"would reach the node; {_HOW}")
    if rule is None or rule.kind is env_names.EnvKind.SECRET:
        if name in env_names.REFUSED:
            why = f"{env_names.REFUSED[name]}, so it is never allowed without trust"
        elif name.startswith(env_names.FAMILIES):
            why = ("is not on the reviewed list of "
                   f"{'/'.join(f + '*' for f in env_names.FAMILIES)} variables")
        else:
            why = "is not an allow-listed variable"
        return f"{why} (value {shown!r}); {_HOW}"
    problem = rule.value_problem(value)
    if problem is None and ".." in value:
        problem = "takes no `..`"
    if problem is not None:
        return f"{problem}, got {shown!r}; {_HOW}"
    return None


def resolve(name: str, known: Collection[str]) -> str | None:
    """The flag vLLM's parser reads for `--name`: the name itself, else the one flag it
    abbreviates (allow_abbrev). None when it names none or several."""
    if name in known:
        return name
    matches = {k for k in known if k.startswith(name)}
    positive = {k.removeprefix("no-") for k in matches if k.removeprefix("no-") in known}
    if len(matches) == 1:
        return next(iter(matches))
    if len(positive) == 1 and all(k.removeprefix("no-") in positive for k in matches):
        return next(iter(positive))
    return None


def value_problem(name: str, value: ArgValue) -> str | None:
    """Why an allow-listed flag's value needs --trust (wrong type, or a string that could be
    more than a value), or None. None (omit) is always fine."""
    rule = SAFE_FLAGS[name]
    if value is None:
        return None
    if rule.kind == "bool":
        return None if isinstance(value, bool) else "takes a YAML boolean (true or false)"
    if rule.kind in ("int", "number"):
        ok = (isinstance(value, int) if rule.kind == "int" else isinstance(value, int | float))
        if not ok or isinstance(value, bool | str):
            return f"takes a YAML {'integer' if rule.kind == 'int' else 'number'}"
        if (rule.low is not None and value < rule.low) or (rule.high is not None
                                                           and value > rule.high):
            return f"takes a value from {rule.low} to {rule.high if rule.high else 'any'}"
        return None
    if not isinstance(value, str):
        return "takes a string"
    if rule.kind == "json":
        return _json_problem(value, rule.json_keys or {})
    if rule.choices:
        return None if value in rule.choices else f"takes one of {', '.join(rule.choices)}"
    assert rule.pattern is not None
    return None if rule.pattern.fullmatch(value) else f"takes a word matching {rule.pattern.pattern}"


def _json_problem(value: str, keys: Mapping[str, str]) -> str | None:
    try:
        data = json.loads(value)
    except ValueError:
        return "takes a JSON object"
    if not isinstance(data, dict):
        return "takes a JSON object"
    for key, item in data.items():
        kind = keys.get(key)
        if kind is None:
            return f"key {key!r} is not allow-listed (allowed: {', '.join(keys)})"
        if (kind == "bool" and not isinstance(item, bool)) or (
                kind == "word" and not (isinstance(item, str) and WORD.fullmatch(item))):
            return f"key {key!r} takes a {'boolean' if kind == 'bool' else 'word'}"
    return None


def argv_problems(full: list[str], own: list[str], release: str,
                  names: frozenset[str]) -> list[str]:
    """Parse the node's engine argv and sm121's own part of it (no recipe args) as vLLM does;
    every destination that differs and is not allow-listed needs --trust, and an argv the
    parser cannot read is refused (the check cannot vouch for it)."""
    parsed = vllm_parser.parse(full, release, names)
    if parsed.error:
        return [f"{parsed.via} does not accept the rendered argv ({parsed.error}), so it cannot "
                "be checked"]
    baseline = vllm_parser.parse(own, release, names)
    if baseline.error:
        return [f"{baseline.via} does not accept sm121's own argv ({baseline.error})"]
    changed = [dest for dest, value in parsed.values.items()
               if not _same(value, baseline.values.get(dest))]
    problems = [f"the rendered argv sets {dest} ({parsed.via}), which needs --trust"
                for dest in sorted(changed) if dest not in SAFE_DESTS]
    for dest in sorted(set(changed) & _JSON_DESTS):
        keys = _json_fields(parsed.values[dest]) - _json_fields(baseline.values.get(dest))
        extra = sorted(keys - set(SAFE_FLAGS[dest.replace("_", "-")].json_keys or {}))
        if extra:
            problems.append(f"the rendered argv sets {dest}.{', '.join(extra)} ({parsed.via}), "
                            "which needs --trust")
    return problems


_JSON_DESTS = frozenset(n.replace("-", "_") for n, r in SAFE_FLAGS.items() if r.kind == "json")


def _json_fields(value: object) -> set[str]:
    """The fields a JSON flag's parsed value sets away from its defaults: the keys of the text
    (the model keeps it), or the changed fields of the config object (vLLM's parser)."""
    if value is None:
        return set()
    if isinstance(value, str):
        try:
            data = json.loads(value)
        except ValueError:
            return {"(not JSON)"}
        return set(data) if isinstance(data, dict) else {"(not an object)"}
    fields = getattr(value, "__dataclass_fields__", None)
    if fields is None:
        return {"(unknown value)"}
    default = type(value)()
    return {name for name in fields if not _same(getattr(value, name), getattr(default, name))}


def _same(a: object, b: object) -> bool:
    try:
        return bool(a == b)
    except Exception:  # a value without a usable ==: counted as changed
        return False
