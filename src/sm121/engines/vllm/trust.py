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

# Environment variables: these families, minus names that load code, read or write files, or
# point the engine at a host; and a few plain settings.
ENV_FAMILIES = ("VLLM_", "NCCL_", "UCX_", "CUDA_")
ENV_UNSAFE_WORDS = frozenset({
    "PLUGIN", "PLUGINS", "PATH", "FILE", "DIR", "DIRECTORY", "ROOT", "HOME", "LIB", "MODULE",
    "MODULES", "CONF", "CONFIG", "DUMP", "TRACE", "HOST", "PORT", "ADDR", "URL", "URI",
    "ENDPOINT", "PROFILER", "INJECTION64", "INJECTION32", "SERVER", "ASSETS", "CACHE",
    "MODELSCOPE", "INSECURE", "RUNTIME", "LOGGING", "SCRIPT", "CMD", "EXEC",
})
# Plain settings outside the families (HF_HUB_OFFLINE only stops downloads; the allocator's
# options name no file), and VLLM_CPU_KVCACHE_SPACE (a size in GiB despite its CACHE).
ENV_SAFE_NAMES = frozenset({
    "VLLM_CPU_KVCACHE_SPACE", "HF_HUB_OFFLINE", "HF_HUB_DISABLE_TELEMETRY",
    "TOKENIZERS_PARALLELISM", "OMP_NUM_THREADS", "GLOO_SOCKET_IFNAME",
    "PYTORCH_CUDA_ALLOC_CONF", "HF_TOKEN",
})
# A secret-named entry hands the engine the launcher's variable of that name: only these two,
# which the engine needs (gated weights from huggingface.co, the API key it checks).
ENV_SECRETS = frozenset({"HF_TOKEN", "VLLM_API_KEY"})
# A value: a word list without `/` (no path, no URL), `$` (no reference) or quotes.
ENV_VALUE = re.compile(r"[A-Za-z0-9_.,:=^+-]{0,256}")


def env_problem(name: str, value: str, secret: bool) -> str | None:
    """Why a recipe's env entry needs --trust, or None. A secret's value is never used (the
    plan passes the launcher's variable of that name), so only its name counts."""
    problems = []
    if secret and name not in ENV_SECRETS:
        problems.append(f"hands the engine this machine's secret {name} (allowed: "
                        f"{', '.join(sorted(ENV_SECRETS))})")
    elif name not in ENV_SAFE_NAMES and name not in ENV_SECRETS:
        if not name.startswith(ENV_FAMILIES):
            problems.append("is not an allow-listed variable (VLLM_*, NCCL_*, UCX_*, CUDA_* or "
                            "a few plain settings)")
        elif set(name.split("_")) & ENV_UNSAFE_WORDS:
            problems.append("may load code, name a file or folder, or point the engine at a "
                            "host")
    if not secret:
        if "$" in value:
            problems.append("refers to a variable of the launching machine ($NAME), which "
                            "would reach the node")
        elif not ENV_VALUE.fullmatch(value) or value.startswith("-") or ".." in value:
            problems.append("has a value that is not a plain word list (no `/`, quotes or "
                            "leading `-`)")
    return "; ".join(problems) or None


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
