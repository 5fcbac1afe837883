"""The hosts a cluster file names, as trust items when they would receive the user's secrets
or data.

A cluster file is shared like a recipe, and its nodes' ssh targets (and the HostNames its
ssh_config gives them) are where `serve` writes the start script that carries HF_TOKEN and
the recipe's other secrets, and where `stage` copies the weights (gated ones included). A
stranger's file could name its own machine there. So each remote node that would receive
something is a trust item, named with the address it resolves to, unless the file is one the
user keeps as theirs: a file under `$SM121_HOME/clusters/` (docs/stranger-data.md).
Pure but for reading the ssh_config file and resolving the file's path."""

from __future__ import annotations

import fnmatch
from collections.abc import Callable
from pathlib import Path

from sm121 import paths
from sm121.cluster.spec import Cluster, Node

OWN_CLUSTERS = "clusters"  # under $SM121_HOME: cluster files the user has said are theirs


def own_clusters_dir() -> Path:
    return paths.home() / OWN_CLUSTERS


def is_users_own(source: str) -> bool:
    """Whether the cluster file lies (links resolved) under $SM121_HOME/clusters/."""
    try:
        file = Path(source).expanduser().resolve(strict=True)
        root = own_clusters_dir().resolve(strict=True)
    except OSError:
        return False
    return file.is_relative_to(root) and file != root


def host_needs(cluster: Cluster, source: str, receives: Callable[[Node], str | None]
               ) -> list[str]:
    """One trust item per remote node that would receive what `receives(node)` names (None:
    nothing), unless the file is the user's own."""
    if is_users_own(source):
        return []
    needs = []
    for index, node in enumerate(cluster.nodes):
        what = receives(node) if node.ssh is not None else None
        if what:
            needs.append(f"nodes[{index}] ({node.name}).ssh: {describe_host(cluster, node)} "
                         f"receives {what}; a host named by a cluster file that is not yours "
                         f"(yours: a file under {own_clusters_dir()}/)")
    return needs


def describe_host(cluster: Cluster, node: Node) -> str:
    """`user@target`, with the HostName the cluster's ssh_config gives it, when it gives one."""
    target = cluster.ssh_target(node) or "this machine"
    alias = target.rpartition("@")[2]
    real = ssh_config_hostname(cluster.ssh_config, alias) if cluster.ssh_config else None
    if real is not None and real != alias:
        return f"{target} (HostName {real} in {cluster.ssh_config})"
    return target


def ssh_config_hostname(config: str, alias: str) -> str | None:
    """The HostName an ssh_config gives `alias`: the first one in a `Host` block whose
    patterns match (ssh keeps the first value it reads), `%h` replaced by the alias. A
    `Match` block is not evaluated (it is a trust item of its own)."""
    try:
        text = Path(config).expanduser().read_text()
    except (OSError, UnicodeDecodeError):
        return None
    applies = True  # lines before the first Host apply to every host
    for line in text.splitlines():
        words = line.strip().replace("=", " ", 1).split()
        if not words or words[0].startswith("#"):
            continue
        keyword = words[0].lower()
        if keyword == "host":
            applies = _host_matches(words[1:], alias)
        elif keyword == "match":
            applies = False
        elif keyword == "hostname" and applies and len(words) > 1:
            return words[1].replace("%h", alias).replace("%%", "%")
    return None


def _host_matches(patterns: list[str], alias: str) -> bool:
    matched = False
    for pattern in patterns:
        negated = pattern.startswith("!")
        if fnmatch.fnmatchcase(alias.lower(), pattern.lstrip("!").lower()):
            if negated:
                return False
            matched = True
    return matched
