"""llama.cpp's llama-server behind the EngineAdapter seam: one part per protocol of
engines/adapter.py, each answering from one module of this package.

The flags of a release are read from its bundled `llama-server --help` (flags.py); a recipe
keys each flag by the first name that help gives (`c`, `np`, `ctk`, `ngl`, `cache-reuse`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from sm121.boot_facts import BootFacts, BootPhases, Milestone, StampedLine
from sm121.engines.adapter import ForcedToolCalls, MemoryFlags, MetricNames, NodeArgvRequest, SchedulerFlags
from sm121.engines.flag_list import FlagChoice, FlagList
from sm121.engines.llamacpp import args as _args
from sm121.engines.llamacpp import flags as _flags
from sm121.engines.llamacpp import log as _log
from sm121.engines.llamacpp import trust as _trust
from sm121.engines.llamacpp.metrics import METRICS
from sm121.errors import Sm121Error
from sm121.findings import Finding
from sm121.recipes.schema import ArgValue, EngineKind, Recipe

# llama.cpp has no share-of-memory flag, no block size and no explicit KV bytes: its KV cache
# is exactly the context it is given (`c` cells of `ctk`/`ctv`), on the GPU for the layers
# `ngl` offloads. The memory planner reads only the rows it names. No fp8 KV type (`kv_fp8`
# unset): its cache types (b11434's help: f32, f16, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0,
# q5_1) have none; q8_0, its 8-bit cache, is an integer quantisation, not vLLM's fp8.
MEMORY = MemoryFlags(
    gmu=None, max_model_len=_args.CTX, batched_tokens=_args.BATCH, block_size=None,
    kv_cache_dtype=_args.CACHE_K, dtype=None, max_num_seqs=_args.SLOTS, kv_bytes=None,
    kv_cache_dtype_v=_args.CACHE_V, shared_pool=_args.UNIFIED, gpu_layers=_args.GPU_LAYERS,
)

# One step: the server fills one batch of up to `b` tokens (every decoding slot's next token,
# then prompt tokens slot by slot: one long prompt may take the whole rest), and decodes it in
# micro-batches of `ub` inside one call, so a decoding slot waits for the whole step either
# way. `np` slots are the sequences. There is no per-request cap on a step's prompt tokens.
SCHEDULER = SchedulerFlags(
    batched_tokens=_args.BATCH, max_num_seqs=_args.SLOTS, long_prefill_threshold=None,
    no_threshold="llama-server has no long-prefill threshold: a slot's prompt fills each "
                 "step's batch up to -b (tools/server/server-context.cpp, update_slots), and "
                 "-ub only splits that step into micro-batches inside one decode call, so the "
                 "decoding slots still wait for the whole step",
    micro_batch=_args.UBATCH,
)
_MODEL_FORMAT = "gguf"


class LlamacppArgv:
    native_command: tuple[str, ...] = _args.NATIVE_COMMAND
    docker_command: tuple[str, ...] = _args.DOCKER_COMMAND
    host_ip_env: str | None = None  # one node only (no RPC rendering)
    api_key_env: str = "LLAMA_API_KEY"
    model_format: str = _MODEL_FORMAT
    one_node: str | None = _args.ONE_NODE

    def node_argv(self, request: NodeArgvRequest) -> tuple[list[str], int | None]:
        book = _flags.book(_flags.nearest(request.recipe.engine.version))
        return _args.node_argv(request, book)

    def rendezvous_ports(self, runtime_kind: str) -> tuple[int, ...]:
        return ()


class LlamacppFlags:
    tool_call_parser: str = _args.JINJA  # tool calls come from the Jinja chat template
    forced_calls: ForcedToolCalls = _args.FORCED_CALLS

    def flag_choice(self, recipe: Recipe) -> FlagChoice:
        return _flags.choose(recipe.engine.version)

    def known_flags(self, recipe: Recipe) -> frozenset[str]:
        return _flags.choose(recipe.engine.version).flags.flags | set(
            recipe.engine.extra_known_args)

    def bundled_versions(self) -> tuple[str, ...]:
        return _flags.bundled_versions()

    def bundled_flags(self, version: str) -> FlagList:
        return _flags.bundled(version)

    def release_of(self, version: str | None) -> str | None:
        return _flags.release_of(version)

    def recipe_key(self, recipe: Recipe) -> str:
        return recipe.name

    def version_args(self, command: Sequence[str]) -> list[str]:
        return ["--version"]

    def parse_help(self, text: str) -> frozenset[str]:
        return _flags.parse_help(text)

    def save_flags(self, release: str, engine_id: str, image: str | None, flags: frozenset[str],
                   how: str, *, recipe: str, builtin: bool) -> Path:
        raise Sm121Error("sm121 reads llama-server's flags from its bundled --help only",
                         f"bundled releases: {', '.join(_flags.bundled_versions())}")

    def derived_args(self, recipe: Recipe,
                     args: Mapping[str, ArgValue]) -> dict[str, tuple[ArgValue, str]]:
        return {}

    def check_layer(self, recipe: Recipe, layer: Mapping[str, ArgValue],
                    merged: Mapping[str, ArgValue], purpose: str | None, source: str,
                    field: str, tool_calling: bool) -> list[Finding]:
        findings = _args.check_args(recipe, layer, source, field)
        if set(layer) & {_args.CTX, _args.SLOTS, _args.UNIFIED}:
            # The layer that sets the context's shape is the one the per-slot rule names.
            findings += _args.check_limits(recipe, merged, source, field)
        if tool_calling:
            agent = purpose is not None and self.wants_tools(purpose)
            findings += _args.check_tool_calling(merged, agent, source, field)
        return findings

    def check_limits(self, recipe: Recipe, merged: Mapping[str, ArgValue], source: str,
                     field: str) -> list[Finding]:
        return _args.check_limits(recipe, merged, source, field)

    def wants_tools(self, purpose: str) -> bool:
        return _args.is_agent_purpose(purpose)


class LlamacppTrust:
    def is_safe_flag(self, name: str) -> bool:
        return name in _trust.SAFE

    def resolve_flag(self, name: str, flags: frozenset[str]) -> str | None:
        # llama.cpp reads no abbreviations: a name is one of its spellings or nothing.
        option = _flags.book(_flags.nearest(None)).option(name)
        return option.key if option is not None else None

    def unsafe_why(self, name: str) -> str:
        return _trust.WHY.get(name, "is not an allow-listed flag")

    def value_problem(self, name: str, value: ArgValue) -> str | None:
        return _trust.value_problem(name, value)

    def env_problem(self, name: str, value: str, secret: bool) -> str | None:
        return _trust.env_problem(name, value, secret, _flags.book(_flags.nearest(None)))

    def argv_problems(self, argv: list[str], own: list[str], version: str,
                      flags: frozenset[str]) -> list[str]:
        return _trust.argv_problems(argv, own, _flags.book(version))


class LlamacppBootLog:
    def parse_boot_log(self, text: str) -> BootFacts:
        return _log.parse_boot_log(text)

    def parse_boot_log_file(self, path: Path) -> BootFacts:
        return _log.parse_boot_log_file(path)

    def parse_phases(self, text: str) -> BootPhases:
        return _log.parse_phases(text)

    def has_error_line(self, text: str) -> bool:
        return _log.has_error_line(text)

    def death_cause(self, text: str, tail: int = 40) -> tuple[str, list[str]]:
        return _log.death_cause(text, tail)

    def stamped_lines(self, text: str, year: int) -> list[StampedLine]:
        return []  # its stamps are offsets from its start, not wall clock (log.py says why)

    def milestones(self, lines: list[StampedLine]) -> list[Milestone]:
        return _log.milestones(lines)


class LlamacppAdapter(LlamacppArgv, LlamacppFlags, LlamacppTrust, LlamacppBootLog):
    kind: EngineKind = EngineKind.LLAMA_CPP
    label: str = "llama.cpp"
    owned_by: str = "llamacpp"
    metrics: MetricNames = METRICS
    memory: MemoryFlags = MEMORY
    scheduler: SchedulerFlags = SCHEDULER
