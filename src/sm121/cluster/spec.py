"""The cluster file: nodes, their fabric, the head. Each node carries its own fabric values,
because cabling is often asymmetric and a worker breaks when it is given the head's."""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, model_validator

from sm121.errors import Sm121Error
from sm121.findings import Finding, Severity
from sm121.names import check_ssh_word
from sm121.recipes.loader import parse_yaml, read_text, validate_model
from sm121.recipes.schema import Name, Strict

SshWord = Annotated[str, AfterValidator(check_ssh_word)]


def _check_ip(value: str) -> str:
    ipaddress.ip_address(value)  # raises ValueError naming the value
    return value


IpAddress = Annotated[str, AfterValidator(_check_ip)]


def _check_folder(value: str) -> str:
    # A node folder reaches remote commands (quoted) and rsync's argv: absolute or under `~`.
    if not (value.startswith("/") or value == "~" or value.startswith("~/")):
        raise ValueError(f"{value!r} must be an absolute path or start with ~/")
    return value


NodeFolder = Annotated[str, AfterValidator(_check_folder)]


class Node(Strict):
    name: Name
    ssh: SshWord | None = Field(None, description="ssh target (user@host or a ~/.ssh/config alias); "
                                               "none means this machine")
    mgmt_if: Name | None = Field(None, description="management interface, e.g. enP7s7")
    fabric_if: Name | None = Field(None, description="fabric interface for NCCL, e.g. enp1s0f0np0")
    fabric_ip: IpAddress | None = None
    hcas: tuple[Name, ...] = Field((), description="RDMA device names, e.g. rocep1s0f0")
    memory_gib: float | None = None
    home: str | None = Field(None, description="the ssh user's home on the node, for `~` in "
                                                "mounts and paths; asked over ssh when unset")
    python: str | None = Field(None, description="interpreter for native recipes whose command "
                                                  "starts with `python`, e.g. ~/vllm/bin/python")
    hf_cache: NodeFolder | None = Field(None, description="this node's local Hugging Face "
                                        "cache (HF_HOME), where `sm121 stage` puts weights; "
                                        "default ~/.cache/huggingface")
    compile_cache: NodeFolder | None = Field(None, description="this node's engine compile/JIT "
                                             "cache (VLLM_CACHE_ROOT); default ~/.cache/vllm")


class Cluster(Strict):
    name: Name
    head: Name
    topology: Literal["single", "direct", "switch"] = "direct"
    nodes: tuple[Node, ...]
    ssh_user: SshWord | None = None
    ssh_port: int | None = None
    ssh_config: str | None = Field(None, description="an ssh_config file for every node "
                                                      "(`ssh -F`); default: ~/.ssh/config")
    master_port: int = Field(29501, description="vLLM's multi-node rendezvous port on the head")
    state_dir: str = Field("~/.sm121", description="where sm121 keeps run directories (logs, "
                                                    "pid files) on each node")

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
