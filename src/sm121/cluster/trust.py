"""What a cluster file asks sm121 to run. A cluster file is shared like a recipe, and the
programs and configs it names run as the ssh user (often root) on every node or on this
machine, so they are trust items like a recipe's `runtime.command`: `plan` lists them and
`serve`, `stage`, `cluster check`, `doctor` and `engine flags` refuse them without --trust.

- a node's `python`: argv[0] of the engine and of the checks; none is needed for the default
  (unset: the node's `python`; or the interpreter running sm121, named by its path);
- `ssh_config` (`ssh -F`): its ProxyCommand, LocalCommand, KnownHostsCommand, Match exec run
  programs here. A config whose every directive is on SAFE_SSH_DIRECTIVES (they connect,
  authenticate and tune the link, and run nothing) needs no trust: an allow-list, read here;
- a node's `compile_cache` outside ~/.cache: `stage --what cache` fills it with the warm
  node's folder as it is, so elsewhere (~/.ssh, /etc/cron.d) it would plant files.

The other folders (home, hf_cache, state_dir) are validated at load instead (spec.py): what is
written under them has a fixed shape. Pure but for reading the ssh_config file."""

from __future__ import annotations

import posixpath
import sys
from pathlib import Path

from sm121.cluster.spec import Cluster, Node
from sm121.errors import Sm121Error
from sm121.safe_paths import is_under

COMPILE_CACHE_ROOT = "~/.cache"
# ssh_config directives that only say where to connect, how to authenticate and how to keep
# the link: none runs a program, forwards a port or the agent, or sends env.
SAFE_SSH_DIRECTIVES = (
    "Host", "HostName", "User", "Port", "IdentityFile", "IdentitiesOnly", "CertificateFile",
    "UserKnownHostsFile", "GlobalKnownHostsFile", "StrictHostKeyChecking", "CheckHostIP",
    "HashKnownHosts", "UpdateHostKeys", "BatchMode", "LogLevel", "ConnectTimeout",
    "ConnectionAttempts", "ServerAliveInterval", "ServerAliveCountMax", "TCPKeepAlive",
    "ControlMaster", "ControlPath", "ControlPersist", "Compression", "AddressFamily",
    "PreferredAuthentications", "PubkeyAuthentication", "PasswordAuthentication",
    "KbdInteractiveAuthentication", "Ciphers", "MACs", "KexAlgorithms", "HostKeyAlgorithms",
    "PubkeyAcceptedAlgorithms", "IPQoS", "RekeyLimit",
)
_SAFE = frozenset(d.lower() for d in SAFE_SSH_DIRECTIVES)  # ssh reads keywords in any case


def cluster_needs(cluster: Cluster) -> list[str]:
    """One line per thing in the cluster file that needs --trust: the field and what it does."""
    needs = []
    for index, node in enumerate(cluster.nodes):
        field = f"nodes[{index}] ({node.name})"
        if not is_default_python(node):
            needs.append(f"{field}.python: runs `{node.python}` on {node.name} (the engine's "
                         "interpreter and the checks' python)")
        if node.compile_cache and not _under_cache_root(node.compile_cache):
            needs.append(f"{field}.compile_cache: `sm121 stage --what cache` fills "
                         f"{node.compile_cache} with another node's cache folder (allowed "
                         f"without --trust: a folder under {COMPILE_CACHE_ROOT}/)")
    if cluster.ssh_config:
        problem = ssh_config_problem(cluster.ssh_config)
        if problem:
            needs.append(f"ssh_config: {cluster.ssh_config} {problem}; ssh -F runs what it "
                         "says on this machine and on every sending node")
    return needs


def is_default_python(node: Node) -> bool:
    """No interpreter named, or the one running sm121 (the built-in default, by its path)."""
    return node.python is None or node.python == sys.executable


def _under_cache_root(folder: str) -> bool:
    normal = posixpath.normpath(folder)
    return normal != COMPILE_CACHE_ROOT and is_under(normal, COMPILE_CACHE_ROOT)


def ssh_config_problem(path: str) -> str | None:
    """Why an ssh_config file needs trust (a directive off the allow-list), or None."""
    try:
        text = Path(path).expanduser().read_text()
    except (OSError, UnicodeDecodeError) as exc:
        return f"cannot be read here to check it ({exc.__class__.__name__})"
    unsafe = []
    for line in text.splitlines():
        words = line.strip().replace("=", " ", 1).split()
        if words and not words[0].startswith("#") and words[0].lower() not in _SAFE:
            unsafe.append(words[0])
    if unsafe:
        return (f"has directives that may run programs or expose this machine: "
                f"{', '.join(dict.fromkeys(unsafe))} (allowed without --trust: "
                f"{', '.join(SAFE_SSH_DIRECTIVES)})")
    return None


def require_cluster_trust(source: str, needs: list[str], trust: bool) -> None:
    """Refuse, listing every item, unless the user gave --trust."""
    if needs and not trust:
        raise Sm121Error(f"cluster file {source} asks to run on this machine or the nodes:\n"
                         "  - " + "\n  - ".join(needs),
                         "read each item, then rerun with --trust to allow them")
