"""The seam between sm121 and an engine: what plan, launch, gateway, monitor, bench and doctor
may ask about an engine, and nothing about how that engine spells it.

An adapter owns every engine fact: the command and its argv (parallelism and multi-node
included), the flags each version accepts, the rules a recipe's args obey and the values
derived from them, the trust allow-list and the check of a rendered argv by the engine's own
parser, the boot-log readers, the names of its Prometheus metrics (with the older names it
exported), the flags the memory planner reads, and the names of its tool-call and reasoning
parsers. engines/registry.py maps an EngineKind to its adapter; a second engine is one more
folder under engines/ and one registry entry (docs/engines.md walks it)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from sm121.boot_facts import BootFacts, BootPhases, Milestone, StampedLine
from sm121.engines.flag_list import FlagChoice, FlagList
from sm121.findings import Finding
from sm121.recipes.schema import ArgValue, EngineKind, Recipe


@dataclass(frozen=True)
class MetricNames:
    """The engine's Prometheus names for what sm121 reads. Each is the names the engine has
    used for the same thing across versions, newest first: the first one exported wins."""

    running: tuple[str, ...]
    waiting: tuple[str, ...]
    kv_usage: tuple[str, ...]  # a 0-1 gauge
    prefix_queries: tuple[str, ...]
    prefix_hits: tuple[str, ...]
    prompt_tokens: tuple[str, ...]
    generation_tokens: tuple[str, ...]
    preemptions: tuple[str, ...]
    success: tuple[str, ...]
    spec_accepted: tuple[str, ...]
    spec_draft: tuple[str, ...]
    ttft: tuple[str, ...]  # histograms
    itl: tuple[str, ...]
    e2e: tuple[str, ...]
    # The counters a bench records as deltas over a measurement, exactly as exported.
    bench_counters: tuple[str, ...]
    namespaces: tuple[str, ...]  # the engine's name prefixes, which a report may drop
    # Histograms of a request's time in prefill and in decode (the engine's own window), read
    # as NAME_sum and NAME_count deltas (bench knee).
    prefill_time: tuple[str, ...] = ()
    decode_time: tuple[str, ...] = ()
    # Info gauges whose labels carry the KV cache's configuration (block size, KV size, GMU).
    cache_config: tuple[str, ...] = ()
    # Prompt-token counters that leave out the tokens served from the prefix cache: where an
    # engine has no queries counter, its queries are such a counter plus its hits.
    prompt_without_hits: tuple[str, ...] = ()

    def queries_in(self, values: Mapping[str, float]) -> float | None:
        """The prefix cache's queries (tokens) among `values` (counters or their deltas, by
        name): the engine's own counter, else its prompt tokens without the hits plus the
        hits (llama.cpp); None where neither is there."""
        own = next((values[n] for n in self.prefix_queries if n in values), None)
        if own is not None:
            return own
        prompt = next((values[n] for n in self.prompt_without_hits if n in values), None)
        hits = next((values[n] for n in self.prefix_hits if n in values), None)
        return None if prompt is None or hits is None else prompt + hits


@dataclass(frozen=True)
class MemoryFlags:
    """The flags whose values the memory planner reads and sets, by the engine's names. None:
    the engine has no such flag (llama.cpp has no memory share, block size or KV bytes)."""

    gmu: str | None  # the share of device memory the engine may take
    max_model_len: str  # the context (vLLM: per request; llama.cpp: total, see shared_pool)
    batched_tokens: str
    block_size: str | None
    kv_cache_dtype: str
    dtype: str | None
    max_num_seqs: str
    kv_bytes: str | None  # an explicit KV cache size in bytes
    # An env var sizing the KV cache in whole GiB, applied after the args (so it wins), and
    # set only for a CPU build: vLLM's VLLM_CPU_KVCACHE_SPACE.
    kv_space_env: str | None = None
    # The weight loader's flag, and its values meant to read only a rank's own tensors
    # (doctor/weights_read.py counts them only once a boot proves it).
    load_format: str | None = None
    selective_loaders: tuple[str, ...] = ()
    # llama.cpp: the V cache's type (K's is kv_cache_dtype), the switch that makes the context
    # one pool shared by every slot (else max_model_len is split across max_num_seqs), and the
    # layers offloaded to the GPU.
    kv_cache_dtype_v: str | None = None
    shared_pool: str | None = None
    gpu_layers: str | None = None
    # The kv_cache_dtype value that stores KV in fp8 (half the bytes of a 16-bit cache: the
    # capacity model's KV lever, a tune arm); None: the engine has no fp8 KV type.
    kv_fp8: str | None = None
    # An explicit block count (vLLM: num-gpu-blocks-override): it fixes the pool in blocks,
    # so a smaller KV dtype does not make it hold more tokens.
    kv_blocks: str | None = None

    @staticmethod
    def value(args: Mapping[str, Any], name: str | None) -> Any:
        """An arg by a row's name; None where the engine has no such flag."""
        return None if name is None else args.get(name)

    def per_request_context(self, args: Mapping[str, Any]) -> int | None:
        """The context one request may use: max_model_len, or for an engine whose context is
        split across its slots (`shared_pool` names the switch that undoes that) the total
        over max_num_seqs. None: the engine's default (the model's own)."""
        total, seqs = args.get(self.max_model_len), args.get(self.max_num_seqs)
        if not isinstance(total, int) or isinstance(total, bool) or total <= 0:
            return None
        if self.shared_pool is None or args.get(self.shared_pool) is True:
            return total
        return total // seqs if isinstance(seqs, int) and seqs > 1 else total

    def splits_context(self, args: Mapping[str, Any]) -> bool:
        """Whether max_num_seqs divides the context among the sequences (llama.cpp's `-c`
        over `-np` slots unless the pool is shared)."""
        return self.shared_pool is not None and args.get(self.shared_pool) is not True

    def with_seqs(self, args: Mapping[str, Any], seqs: int) -> dict[str, Any]:
        """The args that set max_num_seqs to `seqs` and keep the context each request gets:
        where the context is split across the sequences, the total grows with them (each slot
        keeps its window, and the KV cache grows by as much)."""
        changed: dict[str, Any] = {self.max_num_seqs: seqs}
        each = self.per_request_context(args)
        if each is not None and self.splits_context(args):
            changed[self.max_model_len] = each * seqs
        return changed


@dataclass(frozen=True)
class SchedulerFlags:
    """The flags that shape one engine step, by the engine's names (`sm121 tune` varies
    them). The optional ones exist in some engines or versions only: check the version's flag
    list. A knob the engine has no equivalent for is None, with the reason where tune says so."""

    batched_tokens: str  # tokens one step may schedule
    max_num_seqs: str  # requests one step may hold
    long_prefill_threshold: str | None  # a long prefill's tokens per step
    adaptive_threshold: str | None = None  # the engine adapts the threshold to its load
    partial_prefills: str | None = None  # concurrent partial prefills
    long_partial_prefills: str | None = None  # ... of which long ones
    # Why the engine has no long-prefill threshold (set where long_prefill_threshold is None).
    no_threshold: str | None = None
    # The physical batch one step is computed in (llama.cpp's micro-batch): a compute shape,
    # capped at the step budget; it does not change which request waits for which.
    micro_batch: str | None = None


@dataclass(frozen=True)
class ForcedToolCalls:
    """How the engine serves a forced tool call (tool_choice `required`, or one function
    named), so a check that gets text back can say why in the engine's terms. Each field is
    None where the engine forces the call, else what it does instead, in a sentence."""

    # Its grammar for a required call lets text come before the call: a model that never
    # writes its call marker answers in text until max_tokens, with no call.
    text_first: str | None = None
    # It does not read a named tool_choice on chat completions: the request is served as auto.
    named_ignored: str | None = None


@dataclass(frozen=True)
class NodeArgvRequest:
    """What one node's engine argv is rendered from."""

    recipe: Recipe
    model_ref: str
    host: str
    port: int
    args: Mapping[str, ArgValue]  # the engine args (recipe, profile, overrides, derived)
    known: frozenset[str]  # the engine's flags, for the `--no-x` form of a False
    rank: int
    node_count: int
    head_ip: str
    node_ip: str
    master_port: int


@runtime_checkable
class EngineArgv(Protocol):
    """How the engine is started: its command, a node's argv, and the env names it reads."""

    native_command: tuple[str, ...]
    docker_command: tuple[str, ...]
    host_ip_env: str | None  # the env var a multi-node node's own fabric address goes in
    api_key_env: str  # the env var the engine takes its API key from (never its argv)
    # What the engine loads: "hf" (a Hugging Face folder or id) or "gguf" (one GGUF file);
    # launch writes the tiny model in this form.
    model_format: str
    # Why sm121 serves this engine on one node only; None where it spreads a model over
    # several. Validation refuses a recipe of more nodes with it, before anything starts.
    one_node: str | None

    def node_argv(self, request: NodeArgvRequest) -> tuple[list[str], int | None]:
        """The node's engine argv and where the engine's own args start in it; None when the
        node runs no engine itself (a Ray worker). An engine that cannot run a plan's shape
        (several nodes) raises Sm121Error saying so."""
        ...

    def rendezvous_ports(self, runtime_kind: str) -> tuple[int, ...]:
        """Ports a multi-node start needs free on every node, beyond the API port."""
        ...


@runtime_checkable
class EngineFlags(Protocol):
    """The flags each engine version accepts, the rules a recipe's args obey, the values
    derived from them, and the tool-calling rule."""

    tool_call_parser: str  # the flag naming the tool-call parser (its errors name it too)
    forced_calls: ForcedToolCalls

    def flag_choice(self, recipe: Recipe) -> FlagChoice: ...
    def known_flags(self, recipe: Recipe) -> frozenset[str]: ...
    def bundled_versions(self) -> tuple[str, ...]: ...
    def bundled_flags(self, version: str) -> FlagList: ...
    def release_of(self, version: str | None) -> str | None: ...
    def recipe_key(self, recipe: Recipe) -> str: ...
    def version_args(self, command: Sequence[str]) -> list[str]: ...
    def parse_help(self, text: str) -> frozenset[str]: ...

    def save_flags(self, release: str, engine_id: str, image: str | None, flags: frozenset[str],
                   how: str, *, recipe: str, builtin: bool) -> Path: ...

    def derived_args(self, recipe: Recipe,
                     args: Mapping[str, ArgValue]) -> dict[str, tuple[ArgValue, str]]: ...

    def check_layer(self, recipe: Recipe, layer: Mapping[str, ArgValue],
                    merged: Mapping[str, ArgValue], purpose: str | None, source: str,
                    field: str, tool_calling: bool) -> list[Finding]:
        """One layer's args (recipe, profile or --set: `layer`, what it types; `merged`, what
        it runs with): flag names and owners, limits, parser names, and (`tool_calling`)
        whether the profile can take a tool call for its purpose."""
        ...

    def check_limits(self, recipe: Recipe, merged: Mapping[str, ArgValue], source: str,
                     field: str) -> list[Finding]:
        """The recipe's own limits on merged args (a memory-share ceiling, speculative k,
        the context each agent gets)."""
        ...

    def wants_tools(self, purpose: str) -> bool:
        """Whether a profile of this purpose is for agents (its readiness probe sends tools)."""
        ...


@runtime_checkable
class EngineTrust(Protocol):
    """The allow-list of what a foreign recipe may pass, and the check of a rendered argv as
    the engine's own parser reads it."""

    def is_safe_flag(self, name: str) -> bool: ...
    def resolve_flag(self, name: str, flags: frozenset[str]) -> str | None:
        """The flag the engine's parser reads for `--name` (an abbreviation's full name)."""
        ...

    def unsafe_why(self, name: str) -> str: ...
    def value_problem(self, name: str, value: ArgValue) -> str | None: ...
    def env_problem(self, name: str, value: str, secret: bool) -> str | None: ...

    def argv_problems(self, argv: list[str], own: list[str], version: str,
                      flags: frozenset[str]) -> list[str]: ...


@runtime_checkable
class EngineBootLog(Protocol):
    """The engine's boot log: facts, phases, milestones of the start-up waterfall, and the
    cause of a death."""

    def parse_boot_log(self, text: str) -> BootFacts: ...
    def parse_boot_log_file(self, path: Path) -> BootFacts: ...
    def parse_phases(self, text: str) -> BootPhases: ...
    def has_error_line(self, text: str) -> bool: ...
    def death_cause(self, text: str, tail: int = 40) -> tuple[str, list[str]]: ...
    def stamped_lines(self, text: str, year: int) -> list[StampedLine]: ...
    def milestones(self, lines: list[StampedLine]) -> list[Milestone]: ...


@runtime_checkable
class EngineTables(Protocol):
    """The engine's names as tables: its Prometheus metrics, the flags the memory planner
    reads and sets, and the flags that shape one engine step (what `sm121 tune` varies)."""

    metrics: MetricNames
    memory: MemoryFlags
    scheduler: SchedulerFlags


class EngineAdapter(EngineArgv, EngineFlags, EngineTrust, EngineBootLog, EngineTables,
                    Protocol):
    """An engine as sm121 sees it: the small protocols above, composed. Each engine package
    implements them as parts (one class per protocol) and its adapter is their sum."""

    kind: EngineKind
    label: str  # how messages name the engine ("vLLM")
    owned_by: str  # the owner its /v1/models cards name: how a URL's engine is recognised


# The parts, for a test that checks each registered adapter implements each one whole.
PARTS: tuple[type, ...] = (EngineArgv, EngineFlags, EngineTrust, EngineBootLog, EngineTables)
