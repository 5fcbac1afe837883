"""Where a node would read the recipe's weights from at the next serve: its staged local copy,
the model's own folder on local disk, NFS over the fabric, or NFS over the management link
(the field's case: every start re-reads the model at 10G), with the load tax that costs and
the command that stages the weights instead."""

from __future__ import annotations

from sm121.doctor.model import CheckResult, NodeContext, node_finding, result
from sm121.doctor.network_checks import NFS_TYPES, is_management, mount_of, route_iface
from sm121.doctor.weights_read import link_rate
from sm121.findings import Severity
from sm121.hosts.facts import HostFacts

DEFAULT_MGMT_GBPS = 10.0  # a Spark's management port, when the link reports no speed


def load_tax_s(model_bytes: int, rate_bytes_s: float) -> float:
    """Seconds to read the model once at this rate (bytes per second)."""
    return model_bytes / rate_bytes_s


def check_weights_route(facts: HostFacts, ctx: NodeContext) -> CheckResult | None:
    if ctx.recipe is None or "weights" not in facts.paths:
        return None
    size = ctx.model_share_bytes or facts.weights.get("bytes") or 0
    staged = ctx.staged
    if staged is not None and staged.weights is not None:
        weights = staged.weights
        mount = mount_of(facts, weights.folder)
        kind = mount["fstype"] if mount else "?"
        return result("weights-route", f"reads weights locally: staged copy {weights.folder} "
                      f"({weights.bytes / 1e9:.2f} GB, {len(weights.files)} files verified by "
                      f"sha256, revision {weights.revision}) on {kind}")
    where = facts.paths["weights"]
    real = str(where["realpath"])
    mount = mount_of(facts, real)
    on_nfs = mount is not None and mount["fstype"].startswith(NFS_TYPES)
    if not where["exists"] and not on_nfs:
        return result("weights-route", f"the model is not at {where['path']} on this node",
                      [node_finding(ctx, Severity.WARNING, "weights",
                                    f"no copy of the weights on this node ({where['path']})",
                                    f"stage them: {ctx.stage_command}")])
    if mount is None or not on_nfs:
        return result("weights-route", f"reads weights locally from {real} "
                      f"({mount['fstype'] if mount else '?'}; not staged by sm121)")
    server = mount["device"].split(":", 1)[0]
    iface = route_iface(facts, facts.hosts.get(server) or server)
    base = f"reads weights over NFS from {mount['device']} via {iface or '?'}"
    if not where["exists"]:
        base += f" (not in the NFS cache yet: {where['path']})"
    if iface is None or not is_management(facts, ctx, iface):
        return result("weights-route", f"{base} (the fabric)", ok="info")
    speed = _speed_mbps(facts, iface)
    rate, rate_how = link_rate(speed if speed else DEFAULT_MGMT_GBPS * 1000)
    tax = load_tax_s(size, rate)
    link = f"{speed / 1000:g} Gb/s" if speed else f"{DEFAULT_MGMT_GBPS:g} Gb/s assumed"
    reads = f" ({ctx.reads_how})" if ctx.reads_how else ""
    message = (f"weights stream over the management link {iface} ({link}): about {tax:.0f} s "
               f"of load tax per start on this node for {size / 1e9:.1f} GB{reads} at "
               f"{rate / 1e9:.2f} GB/s ({rate_how}), and the link is saturated meanwhile")
    return result("weights-route", f"{base} (the management link)",
                  [node_finding(ctx, Severity.WARNING, "weights", message,
                                f"stage them onto local disk over the fabric: "
                                f"{ctx.stage_command}")])


def _speed_mbps(facts: HostFacts, iface: str) -> float | None:
    text = facts.interfaces.get(iface, {}).get("speed", "")
    try:
        speed = float(text)
    except ValueError:
        return None
    return speed if speed > 0 else None


def check_copy_tool(facts: HostFacts, ctx: NodeContext) -> CheckResult | None:
    """How `sm121 stage` copies to and from this node: rsync (resumes inside a file), else a
    tar stream over ssh (resumes by file)."""
    if not facts.tools:
        return None
    if facts.tools.get("rsync"):
        return result("stage-copy", "sm121 stage copies by rsync (resumes inside a file)",
                      ok="info")
    if facts.tools.get("tar"):
        return result("stage-copy", "no rsync: sm121 stage copies by tar over ssh (resumes by "
                      "file; install rsync to resume inside a file)", ok="info")
    return result("stage-copy", "neither rsync nor tar on this node",
                  [node_finding(ctx, Severity.WARNING, "stage", "sm121 stage cannot copy to "
                                "this node", "install rsync (or tar)")])
