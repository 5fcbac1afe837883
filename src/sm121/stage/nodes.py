"""The nodes of a stage: how sm121 reaches each one (its transport), its home for `~`, its
local cache folders, and the address other nodes copy to (the fabric unless asked)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from sm121.cluster.spec import Cluster, Node
from sm121.hosts.parallel import in_parallel
from sm121.hosts.transport import Transport, node_home, transport_for
from sm121.paths import expand_home
from sm121.stage.layout import node_compile_cache, node_hf_cache

Link = Literal["fabric", "mgmt"]


@dataclass(frozen=True)
class StageNode:
    name: str
    transport: Transport
    home: str
    hf_cache: str  # expanded: absolute on the node
    compile_cache: str
    address: str | None  # user@host other nodes copy to; None: this machine, reached by path
    local: bool  # this machine (no ssh)
    spec: Node | None = None


def stage_nodes(cluster: Cluster, link: Link = "fabric",
                names: Sequence[str] | None = None) -> list[StageNode]:
    """The cluster's nodes (head first), each reached once to learn its home."""
    chosen = [n for n in cluster.ordered() if names is None or n.name in names]
    return in_parallel(chosen, lambda node: _stage_node(cluster, node, link))


def _stage_node(cluster: Cluster, node: Node, link: Link) -> StageNode:
    target = cluster.ssh_target(node)
    address = copy_address(cluster, node, link)
    transport = transport_for(target, cluster.ssh_port, cluster.ssh_config, name=node.name)
    home = node.home or node_home(transport, node.name, local=target is None)
    return StageNode(name=node.name, transport=transport, home=home,
                     hf_cache=expand_home(node_hf_cache(node), home),
                     compile_cache=expand_home(node_compile_cache(node), home),
                     address=address, local=target is None, spec=node)


def copy_address(cluster: Cluster, node: Node, link: Link) -> str | None:
    """Where other nodes send this node its copy: its fabric address (the 200G link), or its
    ssh target only when the management link is asked for."""
    target = cluster.ssh_target(node)
    user = target.split("@", 1)[0] if target and "@" in target else cluster.ssh_user
    if link == "mgmt":
        return target  # None: the node is this machine
    if not node.fabric_ip:
        return None  # only a copy onto the node itself can reach it; others are refused
    return f"{user}@{node.fabric_ip}" if user else node.fabric_ip


def hop_ssh(cluster: Cluster) -> list[str]:
    """The ssh a sending node uses to reach the next node: batch mode (never a prompt), the
    cluster's ssh_config and port, as sm121's own transport uses them."""
    argv = ["ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10",
            "-o", "ServerAliveInterval=15"]
    if cluster.ssh_config:
        argv += ["-F", str(Path(cluster.ssh_config).expanduser())]
    if cluster.ssh_port:
        argv += ["-p", str(cluster.ssh_port)]
    return argv
