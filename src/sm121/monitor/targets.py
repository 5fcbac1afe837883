"""What `sm121 top` watches: runs (their engine, their gateway, their nodes) or bare URLs."""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlsplit

from sm121.errors import Sm121Error
from sm121.runs.state import RunInfo

LOOPBACK = ("127.0.0.1", "localhost", "::1", "0.0.0.0")


@dataclass(frozen=True)
class NodeRef:
    """A host to sample: this machine (ssh None) or a cluster node over ssh."""

    name: str
    ssh: str | None = None
    ssh_port: int | None = None
    ssh_config: str | None = None


@dataclass(frozen=True)
class Target:
    name: str
    urls: tuple[str, ...]  # each /metrics is scraped; engine or gateway is told by its content
    nodes: tuple[NodeRef, ...] = field(default_factory=tuple)
    run_id: str | None = None


def from_url(url: str) -> Target:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise Sm121Error(f"--url {url!r} is not an http(s) URL",
                         "example: --url http://127.0.0.1:8000")
    base = url.rstrip("/").removesuffix("/v1")
    local = parts.hostname in LOOPBACK
    return Target(name=base, urls=(base,), nodes=(NodeRef("local"),) if local else ())


def from_run(run: RunInfo) -> Target:
    urls = [run.base_url]
    gateway = getattr(run, "gateway_url", None)
    if gateway:
        urls.append(gateway)
    nodes = tuple(NodeRef(n.name, n.ssh, n.ssh_port, n.ssh_config) for n in run.nodes
                  if n.name != "gateway")
    local_nodes = tuple(NodeRef("local") if n.ssh is None else n for n in nodes)
    return Target(name=run.run_id, urls=tuple(urls), nodes=local_nodes, run_id=run.run_id)


def distinct_nodes(targets: list[Target]) -> list[NodeRef]:
    """Each host once, this machine first."""
    seen: dict[tuple[str | None, str], NodeRef] = {}
    for target in targets:
        for node in target.nodes:
            seen.setdefault((node.ssh, node.name if node.ssh else "local"), node)
    return sorted(seen.values(), key=lambda n: (n.ssh is not None, n.name))
