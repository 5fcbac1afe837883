"""The memory planner's data: the node, the request, the plan, and the context resolved once.

Every memory module imports these from here, so none needs the planner itself."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from sm121.engines.adapter import MemoryFlags
from sm121.findings import Finding
from sm121.memory.budget import GB10_TOTAL_GIB, Reserve
from sm121.memory.calibration import Observation
from sm121.memory.kv import KvLayout
from sm121.memory.startup_check import NeedModel, StartupCheck
from sm121.recipes.loader import LoadedRecipe
from sm121.recipes.schema import ArgValue, Recipe

DEFAULT_GMU = 0.9  # vLLM's own default
DEFAULT_BATCHED_TOKENS = 2048


def error_pct(predicted: int | None, observed: int | None) -> float | None:
    """The planner's error against an observed pool, in percent of the observation."""
    if not predicted or not observed:
        return None
    return 100.0 * (predicted - observed) / observed


@dataclass(frozen=True)
class NodeMemory:
    name: str
    total_gib: float
    how: str  # where the figure comes from, said in the report
    uma: bool = False  # unified memory (GB10): the GPU's free memory is the system's


GB10_ASSUMED = NodeMemory("gb10", GB10_TOTAL_GIB,
                          "assumed GB10 node (119.6 GiB visible); pass --cluster or --node-gib",
                          uma=True)


@dataclass(frozen=True)
class ModelFiles:
    """What the planner knows of the model's files: sizing/model_files.py reads them."""

    directory: str | None  # None: not on this machine
    config: dict[str, Any] | None
    weights_bytes: int | None  # the safetensors' total size; None: none found
    how: str  # where the facts came from, for the report


NO_FILES = ModelFiles(None, None, None, "the model's files were not read")


@dataclass(frozen=True)
class MemoryRequest:
    """Everything the planner reads, as values: sizing.inputs.memory_request builds one
    from disk (the model's files, the calibration store) and the engine's adapter."""

    recipe: LoadedRecipe
    profile: str | None = None
    overrides: Mapping[str, ArgValue] = field(default_factory=dict)
    node: NodeMemory = GB10_ASSUMED
    weights_gib: float | None = None  # overrides what the files or the recipe say
    kv_bytes: int | None = None  # an explicit KV size, overriding the plan's
    env: Mapping[str, str] = field(default_factory=dict)  # engine env on top of the recipe's
    calibrate: bool = True
    files: ModelFiles = NO_FILES
    observations: tuple[Observation, ...] = ()  # the recipe's observed boots, every profile
    flags: MemoryFlags = field(kw_only=True)  # the engine's names of the settings read


class Comparison(BaseModel):
    source: str
    where: str = ""  # the stack and the source's section it was measured on (field figures)
    settings: str
    predicted_tokens: int | None
    observed_tokens: int | None
    predicted_kv_gib: float | None
    observed_kv_gib: float | None
    calibrates: bool = False  # this observation set the reserve or the bytes per token
    predicted_need_gib: float | None = None  # vLLM's start-up check at its max-model-len
    observed_need_gib: float | None = None
    predicted_outcome: str | None = None  # "boots" / "refuses" against the KV it reported
    observed_outcome: str | None = None

    @property
    def error_pct(self) -> float | None:
        return error_pct(self.predicted_tokens, self.observed_tokens)


class MemoryPlan(BaseModel):
    recipe: str
    profile: str | None
    node: str
    node_total_gib: float
    node_how: str
    mode: str  # "gmu" (KV = GMU x total - weights - reserve) or "explicit"
    gmu: float | None
    gmu_ceiling: float | None
    gmu_ceiling_how: str = ""  # measured on which stack, or assumed from which
    kv_gib: float
    weights_gib: float | None
    weights_how: str
    reserve_gib: float | None
    reserve_how: str
    kv_how: str  # the explicit setting, or the layout
    block_size: int
    batched_tokens: int
    max_model_len: int
    bytes_per_token: float | None
    kv_dtype: str | None = None
    pool_tokens: int | None
    num_blocks: int | None
    max_concurrency: float | None
    largest_context: int | None
    request_kv_gib: float | None = None  # one request at max-model-len, as vLLM's check sums it
    startup: StartupCheck | None = None  # vLLM's start-up check: the need against the budget
    unreproduced: list[str] = []  # observations this plan's model does not reproduce
    comparisons: list[Comparison] = []
    explanation: list[str] = []
    findings: list[Finding] = []


@dataclass(frozen=True)
class Context:
    """Everything resolved once: args, env, model files, layout, reserve."""

    recipe: Recipe
    profile: str | None
    args: dict[str, Any]
    env: dict[str, str]
    files: ModelFiles
    layout: KvLayout | None
    reserve: Reserve
    weights_gib: float | None
    weights_how: str
    flags: MemoryFlags  # the engine's names of the settings read here
    calibrated_from: tuple[str, ...] = ()
    need: NeedModel = NeedModel(None, "not calibrated")
    booked: tuple[tuple[float, str], ...] = ()  # page cache booked per observed boot, GiB
    # Boots of this stack that passed the start-up check: (max-model-len, chunk, KV GiB, source)
    passed: tuple[tuple[int, int, float, str], ...] = ()
    booking_note: str = ""  # the inferred booking against the field's ~20 GB, when they differ

    @property
    def block_size(self) -> int:
        cpu_build = self.flags.kv_space_env is not None and self.flags.kv_space_env in self.env
        default = 128 if cpu_build else 16  # vLLM's CPU build and CUDA defaults
        return int(self.flags.value(self.args, self.flags.block_size) or default)

    @property
    def batched_tokens(self) -> int:
        return int(self.args.get(self.flags.batched_tokens) or DEFAULT_BATCHED_TOKENS)

    @property
    def max_model_len(self) -> int:
        value = self.args.get(self.flags.max_model_len)
        config = self.files.config or {}
        return int(value or config.get("max_position_embeddings") or 131072)
