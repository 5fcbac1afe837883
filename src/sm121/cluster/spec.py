"""The cluster file: nodes, their fabric, the head. Each node carries its own fabric values,
because cabling is often asymmetric and a worker breaks when it is given the head's."""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, model_validator

from sm121.errors import Sm121Error
from sm121.findings import Finding, Severity
from sm121.names import check_ssh_user, check_ssh_word
from sm121.recipes.loader import parse_yaml, read_text, validate_model
from sm121.recipes.schema import MAX_NODES, Name, Strict
from sm121.safe_paths import check_node_folder

SshWord = Annotated[str, AfterValidator(check_ssh_word)]
SshUser = Annotated[str, AfterValidator(check_ssh_user)]


def _check_ip(value: str) -> str:
    ipaddress.ip_address(value)  # raises ValueError naming the value
    return value


IpAddress = Annotated[str, AfterValidator(_check_ip)]


# A node folder reaches remote commands (quoted) and rsync's argv, and sm121 builds the paths
# it writes under it (safe_paths.under_root). Where these folders may lie is left to the
# cluster's owner (a cache on /mnt/nvme is usual), because what is written under them has a
# fixed shape (hub/models--ORG--NAME/snapshots/REV, runs/RUN/NODE); the one folder a stage
# fills with another node's contents, compile_cache, is a trust item outside ~/.cache
# (cluster/trust.py).
NodeFolder = Annotated[str, AfterValidator(check_node_folder)]


def _check_program(value: str) -> str:
    # A program a node runs (argv[0]): a path or a bare command word, never an option.
    if (not value or value.startswith("-")
            or any(c.isspace() or not c.isprintable() for c in value)):
        raise ValueError(f"{value!r} is not an allowed program (allowed: a path or a command "
                         "name without spaces or control characters, not starting with '-')")
    return value


def _check_local_file(value: str) -> str:
    # A file on this machine given to a program's option (ssh -F FILE).
    if not value or value.startswith("-") or any(not c.isprintable() for c in value):
        raise ValueError(f"{value!r} is not an allowed file path (allowed: a path without "
                         "control characters, not starting with '-')")
    return value


Program = Annotated[str, AfterValidator(_check_program)]
LocalFile = Annotated[str, AfterValidator(_check_local_file)]


class Node(Strict):
    name: Name
    ssh: SshWord | None = Field(None, description="ssh target (user@host or a ~/.ssh/config alias); "
                                               "none means this machine")
    mgmt_if: Name | None = Field(None, description="management interface, e.g. enP7s7")
    fabric_if: Name | None = Field(None, description="fabric interface for NCCL, e.g. enp1s0f0np0")
    fabric_ip: IpAddress | None = None
    hcas: tuple[Name, ...] = Field((), description="RDMA device names, e.g. rocep1s0f0")
    memory_gib: float | None = Field(None, gt=0, le=1 << 20)
    home: NodeFolder | None = Field(None, description="the ssh user's home on the node, for "
                                    "`~` in mounts and paths; asked over ssh when unset")
    python: Program | None = Field(None, description="interpreter for native recipes whose "
                                   "command starts with `python`, e.g. ~/vllm/bin/python; a "
                                   "trust item unless it is the interpreter running sm121")
    hf_cache: NodeFolder | None = Field(None, description="this node's local Hugging Face "
                                        "cache (HF_HOME), where `sm121 stage` puts weights; "
                                        "default ~/.cache/huggingface")
    compile_cache: NodeFolder | None = Field(None, description="this node's engine compile/JIT "
                                             "cache (VLLM_CACHE_ROOT); default ~/.cache/vllm")


class Cluster(Strict):
    name: Name
    head: Name
    topology: Literal["single", "direct", "switch"] = "direct"
    nodes: tuple[Node, ...] = Field(max_length=MAX_NODES)
    ssh_user: SshUser | None = None
    ssh_port: int | None = Field(None, ge=1, le=65535)
    ssh_config: LocalFile | None = Field(None, description="an ssh_config file for every "
                                         "node (`ssh -F`); default: ~/.ssh/config; a trust "
                                         "item when it holds a directive that may run a "
                                         "program (cluster/trust.py)")
    master_port: int = Field(29501, ge=1, le=65535,
                             description="vLLM's multi-node rendezvous port on the head")
    state_dir: NodeFolder = Field("~/.sm121", description="where sm121 keeps run directories "
                                  "(logs, pid files) on each node")

    @model_validator(mode="after")
    def _head_is_a_node(self) -> Cluster:
        names = [n.name for n in self.nodes]
        if self.head not in names:
            raise ValueError(f"head {self.head!r} is not one of the nodes {names}")
        if len(set(names)) != len(names):
            raise ValueError(f"node names must be unique, got {names}")
        return self

    def ordered(self) -> list[Node]:
        """Head first, then the workers in file order: the rank order."""
        head = [n for n in self.nodes if n.name == self.head]
        return head + [n for n in self.nodes if n.name != self.head]

    def ssh_target(self, node: Node) -> str | None:
        """The ssh destination of a node, with the cluster's user when the node names none."""
        if node.ssh is None or "@" in node.ssh or not self.ssh_user:
            return node.ssh
        return f"{self.ssh_user}@{node.ssh}"


FABRIC_FIELDS = ("fabric_if", "fabric_ip", "hcas")


def load_cluster(path: str | Path) -> tuple[Cluster, str]:
    file = Path(path).expanduser()
    if not file.is_file():
        raise Sm121Error(f"cluster file {file} does not exist", "check the path given to --cluster")
    source = str(file)
    return validate_model(Cluster, parse_yaml(read_text(file, source), source), source), source


def check_fabric(cluster: Cluster, source: str, nodes_needed: int) -> list[Finding]:
    """Every node that takes part in a multi-node serve needs its own fabric values."""
    if nodes_needed <= 1:
        return []
    findings = []
    for index, node in enumerate(cluster.ordered()[:nodes_needed]):
        missing = [f for f in FABRIC_FIELDS if not getattr(node, f)]
        if missing:
            findings.append(Finding(
                severity=Severity.ERROR, source=source, field=f"nodes[{index}] ({node.name})",
                message=f"missing per-node fabric values: {', '.join(missing)}",
                allowed="fabric_if (interface name), fabric_ip, hcas (list of RDMA devices)",
                fix="set them for this node; never copy the head's values, cabling may be "
                    "asymmetric",
            ))
    if len(cluster.nodes) < nodes_needed:
        findings.append(Finding(
            severity=Severity.ERROR, source=source, field="nodes",
            message=f"the recipe needs {nodes_needed} nodes, the cluster has {len(cluster.nodes)}",
            allowed=f">= {nodes_needed} nodes",
        ))
    return findings
