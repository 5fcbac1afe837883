"""llama-server's argv and the rules of a recipe's args: the command, a node's argv (one node:
llama.cpp spreads a model over machines only through its RPC backend, which sm121 does not
render), the flags sm121 owns, each flag by its one key, and the per-slot context rule."""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping

from sm121.engines.adapter import ForcedToolCalls, NodeArgvRequest
from sm121.engines.llamacpp import flags as _flags
from sm121.errors import Sm121Error
from sm121.findings import Finding, Severity
from sm121.recipes.schema import ArgValue, ModelSource, Recipe

NATIVE_COMMAND = ("llama-server",)
# ggml-org's server images (ghcr.io/ggml-org/llama.cpp:server, :server-cuda) put it here.
DOCKER_COMMAND = ("/app/llama-server",)
TINY_FILE = "tiny.gguf"  # the tiny model as GGUF, beside its HF form (models/tiny_gguf.py)

# The memory and scheduler flags by key (the first spelling `--help` gives).
CTX = "c"  # total context: split across the slots unless kv-unified
SLOTS = "np"  # server slots: requests decoded at once
UNIFIED = "kvu"  # one KV pool shared by every slot
CACHE_K, CACHE_V = "ctk", "ctv"
GPU_LAYERS = "ngl"
BATCH, UBATCH = "b", "ub"
CACHE_REUSE = "cache-reuse"
JINJA = "jinja"

# What sm121 sets itself from the recipe and the plan; a recipe that sets them is refused.
# (`host`, `port`: serve's options; `m`/`hf`: model.*; `a`: model.id and aliases; metrics and
# slots: sm121's monitor and bench read them; api-key: the env var, never the argv.)
OWNED = {"host": "pass --host to sm121", "port": "pass --port to sm121",
         "m": "set model.path (or model.source)", "hf": "set model.hf_id and model.gguf",
         "hff": "set model.gguf", "a": "set model.id and model.aliases",
         "metrics": "sm121 always turns it on (its monitor and bench read /metrics)",
         "slots": "sm121 always turns it on (its status reads /slots)",
         "log-timestamps": "sm121 always turns it on (its boot-log reader reads the stamps)",
         "log-prefix": "sm121 always turns it on (its boot-log reader reads the levels)",
         "api-key": "export LLAMA_API_KEY where you run sm121: never on a command line",
         "api-key-file": "export LLAMA_API_KEY where you run sm121"}
ALWAYS = ("--metrics", "--slots", "--log-timestamps", "--log-prefix")
_AGENT_PURPOSE = re.compile(r"\bagents?\b", re.IGNORECASE)


def is_agent_purpose(purpose: str) -> bool:
    return bool(_AGENT_PURPOSE.search(purpose))


def model_argv(recipe: Recipe, model_ref: str) -> list[str]:
    model = recipe.model
    if model.source is ModelSource.HF:
        tag = f":{model.gguf}" if model.gguf else ""
        return ["-hf", f"{model_ref}{tag}"]
    if model.source is ModelSource.TINY:
        return ["-m", f"{model_ref}/{TINY_FILE}"]
    return ["-m", model_ref]


# Why a recipe of several nodes is refused (plan, serve, tune: validation, before anything
# starts; node_argv below only guards a plan built without it).
ONE_NODE = ("llama.cpp spreads a model over machines only through its RPC backend (rpc-server "
            "on each worker, --rpc on the head), which sm121 does not render")


def node_argv(request: NodeArgvRequest, book: _flags.HelpBook) -> tuple[list[str], int | None]:
    recipe = request.recipe
    if request.node_count > 1:
        raise Sm121Error(f"recipe {recipe.name}: {request.node_count} nodes: {ONE_NODE}",
                         "serve it on one node: parallelism.nodes: 1")
    command = list(recipe.runtime.command or (
        DOCKER_COMMAND if recipe.runtime.kind == "docker" else NATIVE_COMMAND))
    names = ",".join([recipe.model.id, *recipe.model.aliases])
    argv = [*command, *model_argv(recipe, request.model_ref), "-a", names,
            "--host", request.host, "--port", str(request.port), *ALWAYS]
    for key, value in request.args.items():
        argv += render_arg(book, key, value)
    return argv, len(command)


def render_arg(book: _flags.HelpBook, key: str, value: ArgValue) -> list[str]:
    """One arg as llama-server reads it: a true boolean is its flag, a false one its negative
    spelling (none: left out, llama.cpp's default), a value follows its flag."""
    option = book.option(key)
    flag = option.flag if option is not None else f"--{key}"
    if value is None:
        return []
    if isinstance(value, bool):
        if value:
            return [flag]
        return [option.negatives[0]] if option is not None and option.negatives else []
    return [flag, str(value)]


def check_args(recipe: Recipe, args: Mapping[str, ArgValue], source: str,
               field: str) -> list[Finding]:
    """Unknown flags (against the recipe's release's `--help`), another spelling of a flag
    than its key, and the flags sm121 owns."""
    choice = _flags.choose(recipe.engine.version)
    book = _flags.book(choice.flags.version)
    known = set(recipe.engine.extra_known_args)
    findings: list[Finding] = []
    if choice.warning and args:
        findings.append(Finding(severity=Severity.WARNING, source=source, field="engine.version",
                                message=choice.warning,
                                fix="read the list from the engine: sm121 engine flags RECIPE"))
    for given, value in args.items():
        option = book.option(given)
        where = f"{field}.{given}"
        if option is None:
            if given in known:
                continue
            close = difflib.get_close_matches(given, sorted(book.options), n=3)
            findings.append(Finding(
                severity=Severity.ERROR, source=source, field=where,
                message=f"is not a flag of llama-server {book.version}",
                allowed=", ".join(close) if close else "a key of `llama-server --help`",
                fix="correct the name (sm121 keys a flag by the first name --help gives: "
                    "c, np, ctk, ngl, ...)"))
        elif option.key in OWNED:
            findings.append(_error(source, where, f"is sm121's to set: {OWNED[option.key]}"))
        elif option.key != given:
            findings.append(_error(source, where, f"is {option.flag}: write it `{option.key}`, "
                                   "the one key sm121 gives this flag (the first name "
                                   "`llama-server --help` lists), so a profile's value "
                                   "replaces the recipe's"))
        elif option.values == 0 and not isinstance(value, bool) and value is not None:
            findings.append(_error(source, where, "is a switch: give true or false"))
    return findings


def per_slot_context(args: Mapping[str, ArgValue]) -> int | None:
    """The context one request (one agent) gets: `c` split across `np` slots, unless `kvu`
    shares one pool (then any one request may use all of `c`). None when `c` is the model's
    own (0 or unset: llama.cpp reads the trained context from the GGUF)."""
    total = args.get(CTX)
    if not isinstance(total, int) or isinstance(total, bool) or total <= 0:
        return None
    slots = args.get(SLOTS)
    if args.get(UNIFIED) is True or not isinstance(slots, int) or slots <= 1:
        # np unset (or -1, auto): llama.cpp turns kv-unified on by itself.
        return total
    return total // slots


def check_limits(recipe: Recipe, merged: Mapping[str, ArgValue], source: str,
                 field: str) -> list[Finding]:
    """The per-slot context rule: `-c` is the TOTAL context, split across `-np` slots unless
    `--kv-unified`; an agent whose window is set to `-c` ends its session with an error."""
    total, slots = merged.get(CTX), merged.get(SLOTS)
    window = per_slot_context(merged)
    if window is None or window == total:
        return []
    assert isinstance(total, int) and isinstance(slots, int)
    return [Finding(
        severity=Severity.WARNING, source=source, field=f"{field}.{SLOTS}",
        message=f"each agent gets {window:,} tokens of context: -c {total:,} is the total, split "
                f"across -np {slots} slots (no --kv-unified); an agent configured for "
                f"{total:,} ends its session with an error once its prompt passes {window:,}",
        fix=f"set c to {total * slots:,} for {total:,} per agent, or `kvu: true` to share one "
            f"pool of {total:,} (any agent may then use it all, but not all at once); "
            "`sm121 connect` hands agents the per-slot window",
    )]


def check_tool_calling(merged: Mapping[str, ArgValue], agent: bool, source: str,
                       field: str) -> list[Finding]:
    """llama-server parses tool calls only through its Jinja chat templates (`--jinja`, on by
    default since 2025): an agent profile that turns it off gets no tool calls."""
    if agent and merged.get(JINJA) is False:
        return [Finding(
            severity=Severity.ERROR, source=source, field=f"{field}.{JINJA}",
            message="is off in a profile for agents: llama-server parses tool calls only with "
                    "its Jinja chat templates, so every tool call would come back as text",
            fix="remove `jinja: false`")]
    return []


def _error(source: str, field: str, message: str) -> Finding:
    return Finding(severity=Severity.ERROR, source=source, field=field, message=message)


# A forced tool call on llama-server b11434, as read from its source and seen on the real
# server (`-v` logs the grammar of each request): for a required call its chat auto-parser
# builds `generation-prompt (content until "<tool_call>")? tool-calls` (common/chat-auto-
# parser-generator.cpp, build_tool_parser_json_native: the content before the call is optional
# whatever tool_choice says), so the call is forced only once the model starts it; and it reads
# tool_choice as a string only, so a named one is logged as "Wrong type supplied for parameter
# 'tool_choice', using default value" and served as auto.
FORCED_CALLS = ForcedToolCalls(
    text_first="llama-server's grammar for a required tool call lets text come first: the call "
               "is forced only once the model writes its call marker",
    named_ignored="llama-server reads tool_choice only as a string: a named one is served as "
                  "auto (its log: \"Wrong type supplied for parameter 'tool_choice'\")")
