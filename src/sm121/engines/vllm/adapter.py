"""vLLM behind the EngineAdapter seam: each answer is one of this package's modules.

Calls go through the module (`_flags.choose`, not an imported name) so a test that swaps one
function of a module sees every path through the adapter use it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from sm121.boot_facts import BootFacts, BootPhases, Milestone, StampedLine
from sm121.engines.adapter import (
    ForcedToolCalls,
    MemoryFlags,
    MetricNames,
    NodeArgvRequest,
    SchedulerFlags,
)
from sm121.engines.flag_list import FlagChoice, FlagList
from sm121.engines.vllm import agent as _agent
from sm121.engines.vllm import args as _args
from sm121.engines.vllm import flags as _flags
from sm121.engines.vllm import log as _log
from sm121.engines.vllm import milestones as _milestones
from sm121.engines.vllm import multinode as _multinode
from sm121.engines.vllm import parsers as _parsers
from sm121.engines.vllm import phases as _phases
from sm121.engines.vllm import trust as _trust
from sm121.engines.vllm.metrics import METRICS
from sm121.findings import Finding
from sm121.recipes.schema import ArgValue, EngineKind, Recipe

MEMORY = MemoryFlags(
    gmu=_args.GMU, max_model_len="max-model-len", batched_tokens="max-num-batched-tokens",
    block_size="block-size", kv_cache_dtype="kv-cache-dtype", dtype="dtype",
    max_num_seqs=_args.MAX_NUM_SEQS, kv_bytes="kv-cache-memory-bytes",
    kv_space_env="VLLM_CPU_KVCACHE_SPACE",
    load_format="load-format", selective_loaders=("instanttensor",),
    # fp8 KV: on CUDA per the device, on the CPU build only on x86 with AVX-512 or AMX (vLLM
    # 0.32 cpu_attn.py refuses it otherwise, at boot).
    kv_fp8="fp8", kv_blocks="num-gpu-blocks-override",
)

# vLLM 0.32 has the adaptive threshold, 0.21 the partial prefills (the bundled flag lists).
SCHEDULER = SchedulerFlags(
    batched_tokens=MEMORY.batched_tokens, max_num_seqs=MEMORY.max_num_seqs,
    long_prefill_threshold="long-prefill-token-threshold",
    adaptive_threshold="long-prefill-token-threshold-adaptive",
    partial_prefills="max-num-partial-prefills", long_partial_prefills="max-long-partial-prefills",
)


class VllmArgv:
    """engines.adapter.EngineArgv: the command, a node's argv, the env names."""

    native_command: tuple[str, ...] = _args.NATIVE_COMMAND
    docker_command: tuple[str, ...] = _args.DOCKER_COMMAND
    host_ip_env: str | None = "VLLM_HOST_IP"
    api_key_env: str = "VLLM_API_KEY"
    model_format: str = "hf"
    one_node: str | None = None  # native --nnodes, or Ray under docker

    def node_argv(self, request: NodeArgvRequest) -> tuple[list[str], int | None]:
        return _multinode.node_argv(request)

    def rendezvous_ports(self, runtime_kind: str) -> tuple[int, ...]:
        # Ray (the docker multi-node backend) listens on its own port on the head.
        return (_multinode.RAY_PORT,) if runtime_kind == "docker" else ()



class VllmFlags:
    """engines.adapter.EngineFlags: flags per version, args' rules, derived args, tools."""

    tool_call_parser: str = _parsers.TOOL_CALL_PARSER
    forced_calls: ForcedToolCalls = _agent.FORCED_CALLS

    def flag_choice(self, recipe: Recipe) -> FlagChoice:
        return _flags.choose(recipe.engine.version, recipe.runtime.image, _flags.recipe_key(recipe))

    def known_flags(self, recipe: Recipe) -> frozenset[str]:
        return _args.known_flags(recipe)

    def bundled_versions(self) -> tuple[str, ...]:
        return _flags.bundled_versions()

    def bundled_flags(self, version: str) -> FlagList:
        return _flags.bundled(version)

    def release_of(self, version: str | None) -> str | None:
        return _flags.release_of(version)

    def recipe_key(self, recipe: Recipe) -> str:
        return _flags.recipe_key(recipe)

    def version_args(self, command: Sequence[str]) -> list[str]:
        """How the engine tells its version: `vllm --version`, or `python -c` for `python -m`."""
        if command[0].endswith("vllm"):
            return ["--version"]
        return ["-c", "import vllm; print(vllm.__version__)"]

    def parse_help(self, text: str) -> frozenset[str]:
        return _flags.parse_help(text)

    def save_flags(self, release: str, engine_id: str, image: str | None, flags: frozenset[str],
                   how: str, *, recipe: str, builtin: bool) -> Path:
        return _flags.save_cached(release, engine_id, image, flags, how, recipe=recipe,
                                  builtin=builtin)

    def derived_args(self, recipe: Recipe,
                     args: Mapping[str, ArgValue]) -> dict[str, tuple[ArgValue, str]]:
        return _args.derived_args(recipe, args)

    def check_layer(self, recipe: Recipe, layer: Mapping[str, ArgValue],
                    merged: Mapping[str, ArgValue], purpose: str | None, source: str,
                    field: str, tool_calling: bool) -> list[Finding]:
        findings = (_args.check_args(recipe, layer, source, field)
                    + _args.check_limits(recipe, merged, source, field)
                    + _agent.check_parser_names(recipe, layer, source, field))
        if tool_calling:
            findings += _agent.check_tool_calling(merged, purpose, source, field)
        return findings

    def check_limits(self, recipe: Recipe, merged: Mapping[str, ArgValue], source: str,
                     field: str) -> list[Finding]:
        return _args.check_limits(recipe, merged, source, field)

    def wants_tools(self, purpose: str) -> bool:
        return _agent.is_agent_purpose(purpose)



class VllmTrust:
    """engines.adapter.EngineTrust: the allow-list, and the argv read by vLLM's own parser."""

    def is_safe_flag(self, name: str) -> bool:
        return name in _trust.SAFE_FLAGS

    def resolve_flag(self, name: str, flags: frozenset[str]) -> str | None:
        return _trust.resolve(name, flags)

    def unsafe_why(self, name: str) -> str:
        return _trust.WHY.get(name, "is not an allow-listed flag")

    def value_problem(self, name: str, value: ArgValue) -> str | None:
        return _trust.value_problem(name, value)

    def env_problem(self, name: str, value: str, secret: bool) -> str | None:
        return _trust.env_problem(name, value, secret)

    def argv_problems(self, argv: list[str], own: list[str], version: str,
                      flags: frozenset[str]) -> list[str]:
        return _trust.argv_problems(argv, own, version, flags)



class VllmBootLog:
    """engines.adapter.EngineBootLog: vLLM's boot log."""

    def parse_boot_log(self, text: str) -> BootFacts:
        return _log.parse_boot_log(text)

    def parse_boot_log_file(self, path: Path) -> BootFacts:
        return _log.parse_boot_log_file(path)

    def parse_phases(self, text: str) -> BootPhases:
        return _phases.parse_phases(text)

    def has_error_line(self, text: str) -> bool:
        return _log.has_error_line(text)

    def death_cause(self, text: str, tail: int = 40) -> tuple[str, list[str]]:
        return _log.death_cause(text, tail)

    def stamped_lines(self, text: str, year: int) -> list[StampedLine]:
        return _milestones.stamped_lines(text, year)

    def milestones(self, lines: list[StampedLine]) -> list[Milestone]:
        return _milestones.milestones(lines)


class VllmAdapter(VllmArgv, VllmFlags, VllmTrust, VllmBootLog):
    kind: EngineKind = EngineKind.VLLM
    label: str = "vLLM"
    owned_by: str = "vllm"
    metrics: MetricNames = METRICS
    memory: MemoryFlags = MEMORY
    scheduler: SchedulerFlags = SCHEDULER
