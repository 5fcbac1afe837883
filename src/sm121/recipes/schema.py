"""The recipe schema: what a model needs to be served, and the profiles that tune it.

A recipe is YAML validated by these pydantic models. Field names in YAML use snake_case;
engine args keep the engine's own spelling (`max-num-batched-tokens`), so a value copied
from an engine's docs or a field report reads the same in the recipe.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

from sm121.display import escape, quoted
from sm121.findings import Severity
from sm121.model_names import MODEL_NAME_PATTERN
from sm121.names import ProfileName, check_image, check_name, check_revision

ArgValue = str | int | float | bool | None
# Recipe and container names reach scripts and paths: plain words only (a profile's name
# is names.ProfileName, the type tune's arms have too: bounded, since files are named by it).
Name = Annotated[str, AfterValidator(check_name)]
# A revision becomes a folder (snapshots/REVISION) and a file (refs/REVISION) on every node.
Revision = Annotated[str, AfterValidator(check_revision)]
# An image reaches docker's argv (run, save, image inspect) on every node.
Image = Annotated[str, AfterValidator(check_image)]


# Physical limits of the numbers a recipe holds: far above any real machine or model, low
# enough that a stranger's number cannot make sm121 build or compute something huge.
MAX_NODES = 1024
MAX_GPUS_PER_NODE = 64
MAX_RANKS = MAX_NODES * MAX_GPUS_PER_NODE
MAX_SIZE_GB = 1e6  # a petabyte of weights
MAX_PARAMS_B = 1e6  # a quadrillion parameters
MAX_SHARDS = 1 << 20


class Strict(BaseModel):
    """Unknown keys are errors: a typo in a recipe must not pass silently. No number is NaN
    or infinite (`size_gb: .nan` crashed `plan --memory`): pydantic refuses them by name."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class ModelSource(StrEnum):
    HF = "hf"  # a Hugging Face id, resolved through the HF cache
    PATH = "path"  # a local directory
    TINY = "tiny"  # the tiny random-weight model sm121 generates itself


# A Hugging Face repo id: words that never start with `-`, so the engine's parser
# never reads one as an option (they reach its argv as separate tokens).
_HF_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?")
# Env keys reach `env NAME=value` and `docker run -e NAME=value`: a shell variable name only,
# so a key can never be an option of `env` (`--split-string`) or hold a `=`.
ENV_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# An engine arg name after normalize_arg: a plain flag word (no `.`: vLLM reads `--a.b` as a
# key of the JSON flag `a`; no `=` or space: the name must be the whole option), bounded: the
# longest of vLLM 0.32's is 41 characters (no-enable-mamba-cache-stochastic-rounding;
# engines/data/vllm-args-0.32.0.txt), llama.cpp b11434's 30.
ARG_NAME_MAX = 100
ARG_NAME = re.compile(rf"[A-Za-z0-9][A-Za-z0-9-]{{0,{ARG_NAME_MAX - 1}}}")
ARG_NAME_RULE = ("a flag word as the engine spells it, without its dashes: letters, digits and "
                 f"'-', starting with a letter or digit, at most {ARG_NAME_MAX} characters")
# A GGUF quant tag (`UD-Q4_K_XL`, `Q8_0`): one word, never an option, never a path.
_GGUF_TAG = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_SPEC_METHOD = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")


class ModelSpec(Strict):
    id: str = Field(description="The name clients use (served model name).")
    aliases: list[str] = Field(default_factory=list, description="More names clients may use "
                               "for the same model (all given to --served-model-name), e.g. "
                               "a shared name that makes this run a replica behind a gateway.")
    source: ModelSource = ModelSource.HF
    hf_id: str | None = None
    path: str | None = None
    revision: Revision | None = Field(None, description="A commit hash or a branch or tag "
                                      "name (one word: no '/' or '..').")
    size_gb: float | None = Field(None, ge=0, le=MAX_SIZE_GB,
                                  description="Weights on disk, GB (1e9 bytes).")
    params_b: float | None = Field(None, ge=0, le=MAX_PARAMS_B,
                                   description="Parameters, billions.")
    shards: int | None = Field(None, ge=1, le=MAX_SHARDS)
    quantization: str | None = None
    gguf: str | None = Field(None, description="llama.cpp: the quant tag of a GGUF repo on "
                             "Hugging Face (UD-Q4_K_XL), as `llama-server -hf REPO:TAG` takes "
                             "it; a local GGUF is model.path, the .gguf file itself.")

    @field_validator("aliases")
    @classmethod
    def _plain_names(cls, aliases: list[str]) -> list[str]:
        bad = [a for a in aliases if not MODEL_NAME_PATTERN.fullmatch(a)]
        if bad:
            raise ValueError(f"model aliases {bad} must be letters, digits and . _ : / -")
        return aliases

    @field_validator("id")
    @classmethod
    def _plain_id(cls, value: str) -> str:
        if not MODEL_NAME_PATTERN.fullmatch(value):
            raise ValueError("model.id must start with a letter or digit, then letters, digits "
                             "and . _ : / -")
        return value

    @field_validator("hf_id")
    @classmethod
    def _plain_hf_id(cls, value: str | None) -> str | None:
        if value is not None and not _HF_ID.fullmatch(value):
            raise ValueError("model.hf_id must be a Hugging Face id, ORG/NAME or NAME (letters, "
                             "digits, . _ -, starting with a letter or digit)")
        return value

    @field_validator("gguf")
    @classmethod
    def _plain_gguf_tag(cls, value: str | None) -> str | None:
        if value is not None and not _GGUF_TAG.fullmatch(value):
            raise ValueError("model.gguf must be a quant tag: letters, digits, . _ - (starting "
                             "with a letter or digit)")
        return value

    @field_validator("path")
    @classmethod
    def _path_not_an_option(cls, value: str | None) -> str | None:
        if value is not None and (not value or value.startswith("-")):
            raise ValueError("model.path must be a folder path, never starting with `-`")
        return value


class EngineKind(StrEnum):
    VLLM = "vllm"
    SGLANG = "sglang"
    LLAMA_CPP = "llama.cpp"


class EngineSpec(Strict):
    kind: EngineKind = EngineKind.VLLM
    version: str | None = None
    # Flags a patched build accepts beyond the upstream engine's own (e.g. a DSpark overlay).
    extra_known_args: tuple[str, ...] = ()


class Mount(Strict):
    host: str
    container: str
    mode: Literal["rw", "ro"] = "rw"
    purpose: str = ""


class RuntimeSpec(Strict):
    kind: Literal["docker", "native"] = "native"
    image: Image | None = None
    mounts: tuple[Mount, ...] = ()
    # The engine entry point; for docker it runs inside the image.
    command: tuple[str, ...] = ()
    container_name: Name | None = None


class Parallelism(Strict):
    # Bounded by what exists (a rack of machines of a few GPUs each), so that a stranger's
    # `nodes: 100000000` is refused by the schema instead of rendering 1e8 node plans.
    tp: int = Field(1, ge=1, le=MAX_RANKS)
    pp: int = Field(1, ge=1, le=MAX_RANKS)
    dcp: int = Field(1, ge=1, le=MAX_RANKS, description="decode-context-parallel size")
    nodes: int = Field(1, ge=1, le=MAX_NODES)
    gpus_per_node: int = Field(1, ge=1, le=MAX_GPUS_PER_NODE)
    backend: Literal["native", "ray"] = "native"


class Speculative(Strict):
    method: str = "mtp"
    k: int = Field(ge=1, le=64, description="num_speculative_tokens")

    @field_validator("method")
    @classmethod
    def _plain_method(cls, value: str) -> str:
        if not _SPEC_METHOD.fullmatch(value):
            raise ValueError("speculative.method must be a method name such as mtp or eagle")
        return value


class PolicyAction(StrEnum):
    STRIP = "strip"
    REJECT = "reject"


class ParamPolicy(Strict):
    action: PolicyAction
    reason: str
    # A value that is harmless and passes silently (e.g. repetition_penalty 1.0).
    neutral: ArgValue | list[ArgValue] = None


class RequestDefaults(Strict):
    """Values the gateway supplies for this recipe's model when a client omits them; a value
    the client sent always wins. Agent clients differ in what they send: these make one
    endpoint behave the same for all of them without touching a client."""

    # Supplied only to requests that carry `tools` (vLLM refuses tool_choice without tools).
    tool_choice: Literal["auto", "none", "required"] | None = None
    parallel_tool_calls: bool | None = None
    # Merged key by key under the client's own (e.g. {thinking: true} for a reasoning model
    # whose template only reasons when asked).
    chat_template_kwargs: dict[str, ArgValue] = {}


class RequestPolicy(Strict):
    params: dict[str, ParamPolicy] = {}
    defaults: RequestDefaults = RequestDefaults()
    # `sm121 serve` starts the gateway by default when params strip or reject something: it
    # is what enforces them. False only where the policy protects nothing (a test recipe).
    serve_with_gateway: bool = True


class SpecKRule(StrEnum):
    ANY = "any"
    LE5_OR_MULTIPLE_OF_5 = "le5-or-multiple-of-5"


class Limits(Strict):
    gmu_ceiling: float | None = Field(None, gt=0, le=1)
    gmu_ceiling_reason: str = ""
    # Where the ceiling was measured (stack and source), or that it is inherited unmeasured:
    # a ceiling measured on one stack is only assumed on another, and plans say which.
    gmu_ceiling_measured: bool = False
    gmu_ceiling_source: str = Field("", max_length=300)
    # A known-working baseline may sit above the ceiling on purpose: then it only warns.
    gmu_ceiling_severity: Severity = Severity.ERROR
    speculative_k_rule: SpecKRule = SpecKRule.ANY


class Hooks(Strict):
    before_serve: tuple[str, ...] = ()
    after_ready: tuple[str, ...] = ()
    # Commands for hook names outside the built-in set; they run only with --trust.
    custom: dict[str, str] = {}


# A device's or a workload's name as a tuned profile records it: printable words only, since
# plan and serve print it.
_LABEL = r"^[A-Za-z0-9][A-Za-z0-9 ._,:()/+-]{0,119}$"


class MeasuredOn(Strict):
    """Where a tuned profile's capacity was measured (`sm121 tune` writes it): its agents hold
    for that KV pool, and on a smaller pool fewer do, so plan and serve compare the pool at
    hand with this one."""

    device: str = Field(pattern=_LABEL, description="The device it was measured on.")
    pool_tokens: int = Field(ge=1, description="The engine's KV pool in tokens there.")
    workload: str = Field(pattern=_LABEL, description="The workload it was measured for.")
    agents: int | None = Field(None, ge=0, description="The agents it held there (N*).")


class Profile(Strict):
    purpose: str = Field(description="One line: what this profile is for.")
    args: dict[str, ArgValue] = {}
    env: dict[str, str] = {}
    # Replaces the recipe's hooks for this profile (the recipe's custom commands stay
    # defined), so two profiles that differ only in a hook can be A/B'd.
    hooks: Hooks | None = None
    measured_on: MeasuredOn | None = None

    @field_validator("args")
    @classmethod
    def _args_without_dashes(cls, value: dict[str, Any]) -> dict[str, Any]:
        return normalize_args(value)

    @field_validator("env")
    @classmethod
    def _env_names(cls, value: dict[str, str]) -> dict[str, str]:
        return check_env_keys(value)


class Readiness(Strict):
    prompt: str = "Say hello."
    max_tokens: int = Field(8, ge=1, le=1 << 20)
    timeout_s: float = Field(3600, gt=0, le=7 * 86400)


MIN_RESTART_WINDOW_S = 60.0


class RestartPolicy(Strict):
    """Supervision (`restart:` in a recipe, or `serve --supervise`): a watchdog restarts an
    engine that died, at most `max` times within `within_s` seconds, then gives up (failed)."""

    policy: Literal["on-failure", "never"] = "on-failure"
    max: int = Field(3, ge=0, le=1000)
    within_s: float = Field(600, le=365 * 86400)
    # /health failing this many times in a row counts as a death (a hung engine).
    health_failures: int = Field(3, ge=1, le=1000)
    health_interval_s: float = Field(5, gt=0, le=86400)

    @field_validator("within_s")
    @classmethod
    def _window_counts_restarts(cls, value: float) -> float:
        # Each restart takes a backoff (up to 30 s) and a boot: a window shorter than that
        # never holds two restarts, so `max` would never be reached and restarts never end.
        if value < MIN_RESTART_WINDOW_S:
            raise ValueError(f"within_s must be at least {MIN_RESTART_WINDOW_S:g} s: a shorter "
                             "window counts no earlier restart, which makes restarts "
                             "unlimited; the default is 600")
        return value


class Recipe(Strict):
    name: Name
    description: str = ""
    model: ModelSpec
    engine: EngineSpec = EngineSpec()
    runtime: RuntimeSpec = RuntimeSpec()
    parallelism: Parallelism = Parallelism()
    speculative: Speculative | None = None
    args: dict[str, ArgValue] = {}
    env: dict[str, str] = {}
    hooks: Hooks = Hooks()
    request_policy: RequestPolicy = RequestPolicy()
    limits: Limits = Limits()
    readiness: Readiness = Readiness()
    restart: RestartPolicy | None = None
    profiles: dict[ProfileName, Profile] = {}
    default_profile: ProfileName | None = None

    @field_validator("args")
    @classmethod
    def _args_without_dashes(cls, value: dict[str, Any]) -> dict[str, Any]:
        return normalize_args(value)

    @field_validator("env")
    @classmethod
    def _env_names(cls, value: dict[str, str]) -> dict[str, str]:
        return check_env_keys(value)

    def hooks_for(self, profile: str | None) -> Hooks:
        """The hooks a profile runs: its own when it names them, else the recipe's."""
        chosen = self.profiles.get(profile) if profile else None
        if chosen is None or chosen.hooks is None:
            return self.hooks
        return chosen.hooks.model_copy(update={"custom": {**self.hooks.custom,
                                                          **chosen.hooks.custom}})


def normalize_args(args: Mapping[str, Any]) -> dict[str, Any]:
    """Arg names as one spelling (`max-num-seqs`), each an engine arg name (`check_arg_name`);
    two spellings of one flag in one mapping (`max_num_seqs` beside `max-num-seqs`) are an
    error naming both, never one silently winning."""
    spelled = one_spelling(args)
    for name in spelled:
        check_arg_name(name)
    return {name: args[key] for name, key in spelled.items()}


def one_spelling(args: Mapping[str, Any]) -> dict[str, str]:
    """Each flag's one name (normalize_arg) -> its key as given; an error naming both keys
    where two spell one flag."""
    spelled: dict[str, str] = {}
    for key in args:
        name = normalize_arg(key)
        if name in spelled:
            raise ValueError(f"engine args {quoted(spelled[name], 120)} and {quoted(key, 120)} "
                             f"both set --{escape(name, 120)}: keep one")
        spelled[name] = key
    return spelled


def check_arg_name(name: str) -> str:
    """An engine arg's name as sm121 keeps it (after normalize_arg): the one rule for a recipe's
    and a profile's args, `--set`, and the args of a resumed tune's arms (tune.json)."""
    if not ARG_NAME.fullmatch(name):
        raise ValueError(f"{quoted(name, 120)} is not an allowed engine arg name "
                         f"(allowed: {ARG_NAME_RULE})")
    return name


# An engine arg's name where sm121 wrote it (tune.json): already one spelling.
ArgName = Annotated[str, AfterValidator(check_arg_name)]


def check_env_keys(env: dict[str, str]) -> dict[str, str]:
    bad = [k for k in env if not ENV_KEY.fullmatch(k)]
    if bad:
        raise ValueError(f"env names {bad} must match {ENV_KEY.pattern} (a shell variable name)")
    return env


def normalize_arg(name: str) -> str:
    """`--max_num_seqs`, `max_num_seqs` and `max-num-seqs` all name one flag."""
    return name.lstrip("-").replace("_", "-")
