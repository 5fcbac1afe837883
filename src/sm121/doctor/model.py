"""The doctor's data: what a check found on a node, and the report over all nodes."""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import BaseModel

from sm121.cluster.spec import Node
from sm121.engines.adapter import EngineAdapter
from sm121.findings import Finding, Severity, Status, worst
from sm121.memory.model import MemoryPlan
from sm121.recipes.schema import ArgValue, Recipe
from sm121.stage.manifest import NodeManifest


class CheckResult(BaseModel):
    check: str  # memory, weights-cache, caches, nccl, fabric, gmu, weights-vs-ram, uma-gate
    status: Status
    summary: str  # the evidence, in one line
    findings: list[Finding] = []  # warnings and errors, each with its fix


class NodeReport(BaseModel):
    node: str
    hostname: str = ""
    checks: list[CheckResult] = []
    error: str | None = None  # the node could not be probed

    @property
    def worst(self) -> Status:
        statuses: list[Status] = [c.status for c in self.checks]
        return worst(statuses + (["error"] if self.error else []))


class DoctorReport(BaseModel):
    recipe: str | None
    profile: str | None
    nodes: list[NodeReport]
    notes: list[str] = []

    @property
    def has_errors(self) -> bool:
        return any(n.worst == "error" for n in self.nodes)


@dataclass(frozen=True)
class NodeContext:
    """What the checks know beyond the node's own facts."""

    name: str
    spec: Node | None = None  # the cluster file's entry
    cluster_source: str = ""
    recipe: Recipe | None = None
    # The recipe's engine adapter, found once per doctor run (None: no recipe, or an engine
    # sm121 has no adapter for): every check takes it from here.
    engine: EngineAdapter | None = None
    profile: str | None = None
    args: dict[str, ArgValue] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)  # the engine env rendered for this node
    memory: MemoryPlan | None = None
    hf_cache: str = "~/.cache/huggingface"
    jit_cache: str = "~/.cache/vllm"
    model_share_bytes: int | None = None  # what this node reads at a start (the whole checkpoint)
    reads_how: str = ""  # why that many bytes (doctor/weights_read.py)
    staged: NodeManifest | None = None  # what `sm121 stage` left on this node for the model
    stage_command: str = "sm121 stage RECIPE --cluster FILE"


def result(check: str, summary: str, findings: list[Finding] | None = None,
           ok: Status = "ok") -> CheckResult:
    """The status follows the worst finding; without findings it is `ok` (or `info`)."""
    findings = findings or []
    if any(f.severity is Severity.ERROR for f in findings):
        status: Status = "error"
    elif findings:
        status = "warning"
    else:
        status = ok
    return CheckResult(check=check, status=status, summary=summary, findings=findings)


def node_finding(ctx: NodeContext, severity: Severity, field: str, message: str,
                 fix: str) -> Finding:
    return Finding(severity=severity, source=ctx.name, field=field, message=message, fix=fix)
