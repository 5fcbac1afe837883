"""Which node's memory to plan on: given, from the cluster file, or an assumed GB10."""

from __future__ import annotations

from sm121.cluster.spec import load_cluster
from sm121.memory.model import GB10_ASSUMED, NodeMemory


def node_memory(cluster: str | None, node_gib: float | None) -> NodeMemory:
    """The smallest node bounds what fits on every node."""
    if node_gib is not None:
        return NodeMemory("node", node_gib, "given (--node-gib)")
    if not cluster:
        return GB10_ASSUMED
    spec, source = load_cluster(cluster)
    sized = [n for n in spec.ordered() if n.memory_gib]
    if not sized:
        return NodeMemory(spec.head, GB10_ASSUMED.total_gib,
                          f"{source} gives no memory_gib: assumed GB10 (119.6 GiB)", uma=True)
    smallest = min(sized, key=lambda n: n.memory_gib or 0)
    assert smallest.memory_gib is not None
    # A cluster file describes DGX Spark nodes: unified memory.
    return NodeMemory(smallest.name, smallest.memory_gib,
                      f"{source}: the smallest node's memory_gib", uma=True)
