"""The host panel: unified memory as both of vLLM's gates read it (MemAvailable, and MemFree,
which counts reclaimable page cache as used), page cache, swap and load, per node.

This machine is read directly from /proc; a cluster node runs the host probe over
SSH, which costs a round trip and a Python start, so the sampler asks it less often.
Here in hosts/, not monitor/: `sm121 top` and a bench soak both read it."""

from __future__ import annotations

from typing import Any

from sm121.errors import Sm121Error
from sm121.hosts import probe
from sm121.hosts.facts import ProbeRequest, gather
from sm121.hosts.transport import Transport

_KIB_PER_GIB = 1024 * 1024


def host_panel(node: str, meminfo: dict[str, int], load: list[float]) -> dict[str, Any]:
    """Memory in GiB from /proc/meminfo values (kB)."""

    def gib(*keys: str) -> float:
        return round(sum(meminfo.get(k, 0) for k in keys) / _KIB_PER_GIB, 2)

    return {
        "node": node,
        "mem_total_gib": gib("MemTotal"),
        "mem_available_gib": gib("MemAvailable"),
        "mem_free_gib": gib("MemFree"),
        # What a MemFree-based start-up check misses: reclaimable memory it counts as used.
        "uma_gap_gib": round(gib("MemAvailable") - gib("MemFree"), 2),
        "page_cache_gib": gib("Cached"),
        "swap_used_gib": round(gib("SwapTotal") - gib("SwapFree"), 2),
        "load": load[:3],
        "error": None,
    }


def local_host(node: str = "local", root: str = "/") -> dict[str, Any]:
    return host_panel(node, probe.meminfo(root), probe.loadavg(root))


def remote_host(node: str, transport: Transport) -> dict[str, Any]:
    """One node over SSH; an unreachable node is a row with its error, never a crash."""
    try:
        facts = gather(node, transport, ProbeRequest())
    except Sm121Error as exc:
        return {"node": node, "error": exc.message}
    return host_panel(node, facts.meminfo, facts.loadavg)
