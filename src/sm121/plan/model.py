"""The ServePlan: exactly what will run, on which node, in which order. Pure data."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, PrivateAttr

from sm121.engines.adapter import EngineAdapter
from sm121.engines.registry import adapter_of
from sm121.findings import Finding
from sm121.recipes.schema import ArgValue, Hooks, MeasuredOn, RequestPolicy, RestartPolicy

# By the name's last word: HF_TOKEN, VLLM_API_KEY, AWS_SECRET_ACCESS_KEY are secrets;
# TOKENIZERS_PARALLELISM or NCCL_IB_GID_INDEX are settings the engine needs in its env.
SECRET_NAME = re.compile(r"(^|_)(TOKEN|KEY|APIKEY|SECRET|PASSWORD|PASSWD|PASS|CREDENTIALS?|AUTH)$",
                         re.IGNORECASE)


def is_secret(name: str) -> bool:
    return bool(SECRET_NAME.search(name))


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class NodePlan(Frozen):
    name: str
    role: Literal["head", "worker"]
    rank: int
    ssh: str | None  # None: this machine
    runtime: Literal["docker", "native"]
    argv: list[str]
    # Values may hold ${VAR} references, expanded from the launcher's environment at start.
    env: dict[str, str]
    # Secret variables passed through by name from the launcher's environment, never written.
    pass_env: list[str]
    start_order: int  # nodes with the same start order start in parallel
    wait_before_next: str
    # How to reach the node (with `ssh`), and where things live on it.
    ssh_port: int | None = None
    ssh_config: str | None = None
    home: str | None = None  # None: asked over ssh at launch, to expand `~`
    hf_cache: str | None = None  # the node's local HF cache (cluster file), where stage puts weights
    state_dir: str = "~/.sm121"
    container: str | None = None  # docker runtime: the container's name


class ReadinessProbe(Frozen):
    """Ready means a real generation whose token count was checked, not an open port."""

    url: str
    model: str
    prompt: str
    max_tokens: int
    timeout_s: float
    # An agent profile is ready only when a chat request carrying `tools` is accepted too.
    tools: bool = False


class DerivedValue(Frozen):
    value: ArgValue
    how: str


ADAPTER_CONTEXT = "adapter"


def rendered_with(adapter: EngineAdapter) -> dict[str, EngineAdapter]:
    """The validation context that hands a new ServePlan the adapter it was rendered with."""
    return {ADAPTER_CONTEXT: adapter}


class ServePlan(Frozen):
    recipe: str
    profile: str | None
    purpose: str
    engine: str
    engine_args: dict[str, ArgValue]  # resolved: recipe, then profile, then --set, then derived
    derived: dict[str, DerivedValue]
    overrides: dict[str, ArgValue]
    model_ref: str  # what the engine is given as the model
    host: str
    port: int
    nodes: list[NodePlan]
    hooks: Hooks
    readiness: ReadinessProbe
    request_policy: RequestPolicy
    findings: list[Finding]
    # The recipe as validated, and where it came from (a built-in name, a user recipe, a path):
    # a run keeps its recipe with its plan, so calibration needs the run directory alone.
    recipe_source: str = ""
    recipe_spec: dict[str, Any] | None = None
    restart: RestartPolicy | None = None  # supervised: a watchdog restarts a dead engine
    # A tuned profile's record of the device, pool and workload its capacity was measured on
    measured_on: MeasuredOn | None = None
    # What this recipe, not being built in, asks to run or expose (plan/trust.py); plan and
    # serve refuse without --trust when it is not empty.
    needs_trust: list[str] = []
    # The engine's adapter, carried with the plan so no reader looks it up again. Not a
    # field: it is code, never written to the plan file.
    _adapter: EngineAdapter = PrivateAttr()

    def model_post_init(self, context: Any) -> None:
        """Found once, where the plan is built: the adapter render rendered with (given as
        the validation context, `rendered_with`), else the registry's for `engine` (a plan
        read back from a run's plan.json). Set on every plan, so two equal plans compare
        equal whichever way they were built."""
        given = context.get(ADAPTER_CONTEXT) if isinstance(context, dict) else None
        if given is not None and given.kind.value != self.engine:
            raise ValueError(f"a {given.kind.value} adapter for a {self.engine} plan")
        self._adapter = given if given is not None else adapter_of(self.engine)

    @property
    def adapter(self) -> EngineAdapter:
        return self._adapter

    @property
    def head(self) -> NodePlan:
        return next(n for n in self.nodes if n.role == "head")

    @property
    def base_url(self) -> str:
        return self.readiness.url
