"""`sm121 cluster check`: can every node of a cluster file take part in a serve? SSH
reachability, the runtime (docker or python), the interfaces and HCAs named in the file, one
image id on all nodes, free ports and clock skew. Each check is a short read-only command."""

from __future__ import annotations

import dataclasses
import shlex
import time
from dataclasses import dataclass

from sm121.cluster.spec import Cluster, Node
from sm121.doctor.staged_check import staged_detail
from sm121.errors import Sm121Error
from sm121.findings import Status
from sm121.hosts.parallel import in_parallel
from sm121.hosts.transport import Transport, transport_for
from sm121.recipes.schema import Recipe
from sm121.stage.images import image_id

q = shlex.quote

MAX_SKEW_S = 1.0
# Listening TCP ports from /proc (state 0A), so no `ss` or `netstat` is needed on the node.
_LISTENING = ("cat /proc/net/tcp /proc/net/tcp6 2> /dev/null | "
              "awk '$4 == \"0A\" {split($2, a, \":\"); print a[2]}'")



@dataclass(frozen=True)
class Check:
    node: str
    check: str
    status: Status
    detail: str
    fix: str = ""


@dataclass(frozen=True)
class CheckRequest:
    cluster: Cluster
    source: str
    runtime: str | None = None  # docker | native | None (report what is there)
    image: str | None = None
    python: str = "python3"
    ports: tuple[int, ...] = (8000,)  # beside the cluster's own master_port, always checked
    recipe: Recipe | None = None  # with it: what `sm121 stage` left on each node for it
    recipe_name: str = ""

    @property
    def all_ports(self) -> tuple[int, ...]:
        return tuple(dict.fromkeys((*self.ports, self.cluster.master_port)))


def check_cluster(request: CheckRequest) -> list[Check]:
    nodes = request.cluster.ordered()
    per_node = in_parallel(nodes, lambda node: _check_node(request, node))
    findings = [f for node_findings, _ in per_node for f in node_findings]
    images = {node.name: image for node, (_, image) in zip(nodes, per_node, strict=True)
              if image}
    if request.image and len(set(images.values())) > 1:
        findings.append(_finding("error", "cluster", "image",
                                 f"{request.image} differs between nodes: "
                                 + ", ".join(f"{n} {i[:19]}" for n, i in images.items()),
                                 fix="pull the same tag on every node (docker pull), or "
                                     "stream one image to every node: sm121 stage RECIPE "
                                     "--cluster FILE --what image"))
    return findings


def _check_node(request: CheckRequest, node: Node) -> tuple[list[Check], str | None]:
    target = request.cluster.ssh_target(node)
    transport = transport_for(target, request.cluster.ssh_port, request.cluster.ssh_config,
                              name=node.name)
    where = f"{node.name} ({target or 'this machine'})"
    try:
        skew, uncertainty = _clock_skew(transport)
    except Sm121Error as exc:
        return [_finding("error", where, "ssh", exc.message, fix=exc.hint)], None
    findings = [_finding("ok", where, "ssh",
                         "reachable" if target else "this machine")]
    if abs(skew) - uncertainty > MAX_SKEW_S:  # a slow round trip is not a skewed clock
        findings.append(_finding("warning", where, "clock",
                                 f"clock differs from this machine's by {skew:+.1f} s "
                                 f"(+/- {uncertainty:.1f} s)",
                                 fix="run chrony or systemd-timesyncd on every node; "
                                     "start-up timings and logs compare across nodes"))
    findings += _runtime(dataclasses.replace(request, python=node.python or request.python),
                         transport, where)
    findings += _interfaces(transport, node, where)
    findings += _ports(transport, request.all_ports, where)
    image = image_id(transport, request.image) if request.image else None
    if request.image and image is None:
        findings.append(_finding("error", where, "image", f"{request.image} is not on "
                                 "this node", fix=f"docker pull {request.image}"))
    if request.recipe is not None:
        status, detail, fix = staged_detail(transport, node, request.recipe,
                                            request.recipe_name, request.source, target is None)
        findings.append(_finding(status, where, "staged", detail, fix=fix))
    return findings, image


def _clock_skew(transport: Transport, samples: int = 3) -> tuple[float, float]:
    """(skew, uncertainty) in seconds, NTP-style: the node's clock against the midpoint of the
    round trip, from the sample with the shortest round trip (the first one also opens the
    SSH connection); the skew is known only to within half that round trip."""
    best: tuple[float, float] | None = None
    for _ in range(samples):
        before = time.time()
        result = transport.run(["date", "+%s.%N"], timeout=30)
        after = time.time()
        if not result.ok:
            raise Sm121Error(f"`date` failed: {result.stderr.strip()}", "check the node's shell")
        sample = (float(result.stdout.strip()) - (before + after) / 2, (after - before) / 2)
        if best is None or sample[1] < best[1]:
            best = sample
    assert best is not None
    return best


def _runtime(request: CheckRequest, transport: Transport, where: str) -> list[Check]:
    findings = []
    if request.runtime in (None, "docker"):
        done = transport.run_shell("docker version --format '{{.Server.Version}}'", timeout=30)
        severity: Status = "error" if request.runtime == "docker" else "warning"
        findings.append(_finding("ok", where, "docker", f"server {done.stdout.strip()}")
                        if done.ok else
                        _finding(severity, where, "docker", "docker is not usable here: "
                                 + (done.stderr.strip().splitlines() or ["not installed"])[-1],
                                 fix="install docker and add the ssh user to the docker group"))
    if request.runtime in (None, "native"):
        done = transport.run([request.python, "-c", "import sys; print(sys.version.split()[0])"],
                             timeout=30)
        missing: Status = "error" if request.runtime == "native" else "warning"
        findings.append(_finding("ok", where, "python", f"{request.python} "
                                 f"{done.stdout.strip()}") if done.ok else
                        _finding(missing, where, "python", f"{request.python} does not run",
                                 fix="set `python` for this node in the cluster file"))
    return findings


def _interfaces(transport: Transport, node: Node, where: str) -> list[Check]:
    names = [("mgmt_if", i, "/sys/class/net") for i in [node.mgmt_if] if i]
    names += [("fabric_if", i, "/sys/class/net") for i in [node.fabric_if] if i]
    names += [("hcas", h, "/sys/class/infiniband") for h in node.hcas]
    if not names:
        return []
    script = "; ".join(f"[ -e {q(folder + '/' + name)} ] || echo {q(field + ' ' + name)}"
                       for field, name, folder in names)
    if node.fabric_ip and node.fabric_if:
        script += (f"; ip -o addr show dev {q(node.fabric_if)} 2> /dev/null | "
                   f"grep -qF {q(' ' + node.fabric_ip + '/')} || echo fabric_ip {q(node.fabric_ip)}")
    missing = transport.run_shell(script, timeout=30).stdout.split("\n")
    return [_finding("error", where, line.split()[0],
                     f"{line.split()[1]} does not exist on this node",
                     fix="use the names `ip -br link` and `ibdev2netdev` print on that node "
                         "(cabling may be asymmetric)") for line in missing if line.strip()]


def _ports(transport: Transport, ports: tuple[int, ...], where: str) -> list[Check]:
    listening = {int(p, 16) for p in transport.run_shell(_LISTENING, timeout=30).stdout.split()
                 if p.strip()}
    return [_finding("error", where, "ports", f"port {port} is already in use",
                     fix="stop what listens there, or choose another port")
            for port in ports if port in listening]


def _finding(status: Status, where: str, check: str, detail: str, fix: str = "") -> Check:
    return Check(node=where, check=check, status=status, detail=detail, fix=fix)
