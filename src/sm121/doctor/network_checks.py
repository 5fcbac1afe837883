"""Where the caches live (local disk or NFS, and which link carries NFS), NCCL variables
against the interfaces and RDMA devices that exist, and per-node fabric values."""

from __future__ import annotations

import ipaddress

from sm121.cluster.spec import FABRIC_FIELDS
from sm121.doctor.model import CheckResult, NodeContext, node_finding, result
from sm121.findings import Severity
from sm121.hosts.facts import HostFacts

NFS_TYPES = ("nfs", "nfs4", "cifs", "smb3", "fuse.sshfs")


def mount_of(facts: HostFacts, path: str) -> dict[str, str] | None:
    """The mount holding `path`: the longest mount point that prefixes it."""
    best = None
    for mount in facts.mounts:
        point = mount["mountpoint"].rstrip("/") or "/"
        if (path == point or path.startswith(point + "/") or point == "/") and (
                best is None or len(point) > len(best["mountpoint"].rstrip("/") or "/")):
            best = mount
    return best


def route_iface(facts: HostFacts, address: str) -> str | None:
    """The interface the kernel routes `address` through (longest prefix wins)."""
    try:
        target = ipaddress.IPv4Address(address)
    except ValueError:
        return None
    best: tuple[int, str] | None = None
    for route in facts.routes:
        network = ipaddress.IPv4Network(f"{route['destination']}/{route['mask']}", strict=False)
        if target in network and (best is None or network.prefixlen > best[0]):
            best = (network.prefixlen, route["iface"])
    return best[1] if best else None


def check_caches(facts: HostFacts, ctx: NodeContext) -> list[CheckResult]:
    return [_check_cache(facts, ctx, label) for label in ("hf-cache", "jit-cache")
            if label in facts.paths]


def _check_cache(facts: HostFacts, ctx: NodeContext, label: str) -> CheckResult:
    where = facts.paths[label]
    real = str(where["realpath"])
    mount = mount_of(facts, real)
    if mount is None or not mount["fstype"].startswith(NFS_TYPES):
        fstype = mount["fstype"] if mount else "?"
        state = "" if where["exists"] else " (does not exist yet)"
        return result(label, f"{where['path']} -> {real}{state} on local {fstype} "
                      f"({mount['device'] if mount else '?'})")
    server = mount["device"].split(":", 1)[0]
    address = facts.hosts.get(server) or server
    iface = route_iface(facts, address)
    summary = (f"{where['path']} -> {real} on {mount['fstype']} {mount['device']} "
               f"({mount['options']}); the server {address} is reached via {iface or '?'}")
    findings = []
    if label == "jit-cache":
        findings.append(node_finding(ctx, Severity.WARNING, label,
                                 f"the JIT/compile cache is on NFS ({mount['device']})",
                                 "keep it on local NVMe: mount a local directory at "
                                 f"{where['path']}"))
    if iface and is_management(facts, ctx, iface) and not _weights_route_says_it(facts, ctx,
                                                                                 mount):
        findings.append(node_finding(ctx, Severity.WARNING, label,
                                 f"weights stream from {address} over {iface}, the management "
                                 "link: every start re-reads them at 10G speed and saturates it",
                                 "keep the weights on local NVMe, or mount the NAS over the "
                                 "fabric"))
    return result(label, summary, findings, ok="info")


def _weights_route_says_it(facts: HostFacts, ctx: NodeContext, mount: dict[str, str]) -> bool:
    """With a recipe, the weights-route check warns of the recipe's weights on this mount over
    the management link, with the load tax per start: one warning, not two."""
    weights = facts.paths.get("weights")
    return (ctx.recipe is not None and weights is not None
            and mount_of(facts, str(weights["realpath"])) == mount)


def is_management(facts: HostFacts, ctx: NodeContext, iface: str) -> bool:
    if ctx.spec and ctx.spec.mgmt_if:
        return iface == ctx.spec.mgmt_if
    fabric = {net for nets in facts.rdma.values() for net in nets}
    if ctx.spec and ctx.spec.fabric_if:
        fabric.add(ctx.spec.fabric_if)
    # Without a cluster file: any link that is not an RDMA device's is the management link.
    return iface not in fabric


def check_nccl(facts: HostFacts, ctx: NodeContext) -> CheckResult:
    env = facts.env | ctx.env  # what the engine will get wins over the shell's
    findings = []
    for var in ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME"):
        if env.get(var):
            missing = _missing_ifaces(env[var], set(facts.interfaces))
            if missing:
                findings.append(node_finding(
                    ctx, Severity.ERROR, var,
                    f"{env[var]} names {', '.join(missing)}, not an interface of this node",
                    f"use one of: {', '.join(sorted(facts.interfaces))} (this node's own "
                    "fabric interface; never the head's copied over)"))
    if env.get("NCCL_IB_HCA"):
        missing = _missing_hcas(env["NCCL_IB_HCA"], set(facts.rdma))
        if missing:
            findings.append(node_finding(
                ctx, Severity.ERROR, "NCCL_IB_HCA",
                f"{env['NCCL_IB_HCA']} names {', '.join(missing)}, not an RDMA device of this node",
                f"use this node's own: {', '.join(sorted(facts.rdma)) or '(none found)'}"))
    findings += _nccl_on_management(facts, ctx, env)
    shown = {k: env[k] for k in ("NCCL_NET", "NCCL_IB_HCA", "NCCL_SOCKET_IFNAME",
                                 "GLOO_SOCKET_IFNAME") if env.get(k)}
    rdma = ", ".join(f"{d} ({'/'.join(n) or '-'})" for d, n in facts.rdma.items()) or "none"
    summary = (f"{shown or 'no NCCL variables set'}; interfaces: {', '.join(facts.interfaces)}; "
               f"RDMA: {rdma}")
    return result("nccl", summary, findings, ok="info")


def _nccl_on_management(facts: HostFacts, ctx: NodeContext, env: dict[str, str]) -> list:
    """NCCL must ride the fabric (the field: NCCL_NET=IB, NCCL_IB_HCA, NCCL_SOCKET_IFNAME on
    the fabric interface). A socket interface on the management link carries NCCL's bootstrap
    there, and with NCCL_NET=Socket all of its traffic: the 10G link the field ruled out."""
    value = env.get("NCCL_SOCKET_IFNAME", "")
    if not value or value.startswith("^"):
        return []
    names = [n.strip() for n in value.lstrip("=").split(",") if n.strip()]
    on_mgmt = [i for i in facts.interfaces
               if any(i.startswith(n) for n in names) and is_management(facts, ctx, i)]
    if not on_mgmt:
        return []
    socket = env.get("NCCL_NET", "").lower() == "socket"
    what = ("all of NCCL's traffic (NCCL_NET=Socket)" if socket else
            "NCCL's bootstrap and any socket fallback")
    fabric = sorted({n for nets in facts.rdma.values() for n in nets})
    return [node_finding(
        ctx, Severity.WARNING, "NCCL_SOCKET_IFNAME",
        f"{value} is the management link ({', '.join(on_mgmt)}): {what} would ride it, not the "
        "fabric",
        "NCCL_NET=IB, NCCL_IB_HCA set to this node's RDMA devices and NCCL_SOCKET_IFNAME on "
        f"its fabric interface ({', '.join(fabric) or 'none found'})")]


def _missing_ifaces(value: str, present: set[str]) -> list[str]:
    """NCCL syntax: a comma list of prefixes; `=name` is exact, `^...` excludes (not checked)."""
    if value.startswith("^"):
        return []
    exact = value.startswith("=")
    missing = []
    for name in value.lstrip("=").split(","):
        name = name.strip()
        hit = name in present if exact else any(i.startswith(name) for i in present)
        if name and not hit:
            missing.append(name)
    return missing


def _missing_hcas(value: str, present: set[str]) -> list[str]:
    if value.startswith("^"):
        return []
    names = [part.split(":")[0].strip() for part in value.lstrip("=").split(",")]
    return [n for n in names if n and not any(d.startswith(n) for d in present)]


def check_fabric(facts: HostFacts, ctx: NodeContext) -> CheckResult | None:
    """The cluster file's values for this node, against what the node really has."""
    spec = ctx.spec
    if spec is None:
        return None
    findings = []
    missing = [f for f in FABRIC_FIELDS if not getattr(spec, f)]
    if missing and ctx.recipe is not None and ctx.recipe.parallelism.nodes > 1:
        findings.append(node_finding(ctx, Severity.ERROR, "cluster file",
                                 f"missing per-node fabric values: {', '.join(missing)}",
                                 "set fabric_if, fabric_ip and hcas for this node"))
    if spec.fabric_if and spec.fabric_if not in facts.interfaces:
        findings.append(node_finding(ctx, Severity.ERROR, "fabric_if",
                                 f"{spec.fabric_if} does not exist on this node",
                                 f"this node has: {', '.join(sorted(facts.interfaces))}"))
    absent = [h for h in spec.hcas if h not in facts.rdma]
    if absent:
        findings.append(node_finding(ctx, Severity.ERROR, "hcas",
                                 f"{', '.join(absent)} not found on this node (asymmetric "
                                 "cabling: each node has its own names)",
                                 f"this node has: {', '.join(sorted(facts.rdma)) or '(none)'}"))
    return result("fabric", f"fabric_if {spec.fabric_if or '-'}, fabric_ip "
                  f"{spec.fabric_ip or '-'}, hcas {', '.join(spec.hcas) or '-'}", findings)

