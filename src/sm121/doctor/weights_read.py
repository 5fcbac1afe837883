"""What one node reads from the checkpoint at every start, and at what rate.

The field (GLM-5.2, 406 GB, 4 nodes, decode-context-parallel 4): every serve re-read the full
~406 GB on every node (interface counters: ~1.3 TB rx over 3+ loads), so a node reads the whole
checkpoint, not size / node count. The report does not say which loader those serves ran; it
suggests `--load-format instanttensor` with context parallelism as a way to read less. A
tensor-selective loader could read only the node's shard; until a boot of this recipe shows
it (a start-up waterfall whose weights phase reads less), sm121 counts the whole checkpoint
and says which loader was assumed.

The rate: the field measured about 1.1 GB/s of NFS over the 10G management link (nconnect=8,
512K rsize); elsewhere the line rate at 90% stands in, said as an estimate."""

from __future__ import annotations

from dataclasses import dataclass

from sm121.engines.adapter import MemoryFlags
from sm121.recipes.schema import ArgValue, Recipe

FIELD_NFS_10G_BYTES_S = 1.1e9  # measured: "~1.1 GB/s practical NFS throughput" over 10G
FIELD_RATE_SOURCE = ("measured in the field: ~1.1 GB/s NFS over the 10G management link "
                     "(nconnect=8), ~370 s per node for GLM-5.2's 406 GB")
LINK_EFFICIENCY = 0.9  # NFS over TCP reaches about this share of the line rate


@dataclass(frozen=True)
class NodeReads:
    bytes: int
    how: str


def node_reads(recipe: Recipe, args: dict[str, ArgValue], flags: MemoryFlags,
               files_bytes: int = 0) -> NodeReads | None:
    """Bytes this node reads at a start: the files on the node, else the recipe's size."""
    total = files_bytes or (int(recipe.model.size_gb * 1e9) if recipe.model.size_gb else 0)
    if not total:
        return None
    source = "the files on this node" if files_bytes else f"model.size_gb {recipe.model.size_gb}"
    loader = str(args.get(flags.load_format) or "") if flags.load_format else ""
    if loader and loader in flags.selective_loaders:
        how = (f"the whole checkpoint ({source}): {flags.load_format} {loader} is configured but no "
               "boot of this recipe proves it reads less (the field's GLM-5.2 nodes each re-read "
               "all 406 GB; the report does not say which loader they ran)")
    else:
        how = f"the whole checkpoint ({source}): every rank's loader reads every file"
    return NodeReads(total, how)


def link_rate(speed_mbps: float | None) -> tuple[float, str]:
    """Bytes per second over the management link, and where the figure comes from."""
    if speed_mbps is None or abs(speed_mbps - 10_000) < 1:
        return FIELD_NFS_10G_BYTES_S, FIELD_RATE_SOURCE
    rate = speed_mbps * 1e6 / 8 * LINK_EFFICIENCY
    return rate, (f"estimated: {speed_mbps / 1000:g} Gb/s line rate at {LINK_EFFICIENCY:.0%} "
                  "(not measured on this link)")
