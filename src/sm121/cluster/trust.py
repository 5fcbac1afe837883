"""What a cluster file asks sm121 to run. A cluster file is shared like a recipe, and the
programs and configs it names run as the ssh user (often root) on every node or on this
machine, so they are trust items like a recipe's `runtime.command`: `plan` lists them and
`serve`, `stage`, `cluster check`, `doctor` and `engine flags` refuse them without --trust.

- a node's `python`: argv[0] of the engine and of the checks; none is needed for the default
  (unset: the node's `python`; or the interpreter running sm121, named by its path);
- `ssh_config` (`ssh -F`): its ProxyCommand, LocalCommand, KnownHostsCommand, Match exec run
  programs here, and UserKnownHostsFile, ControlPath and the like name files ssh writes. A
  config whose every directive is on SAFE_SSH_DIRECTIVES (they connect, authenticate and
  tune the link, and neither run nor write anything) needs no trust: an allow-list, read
  here;
- a node's `compile_cache` outside ~/.cache: `stage --what cache` fills it with the warm
  node's folder as it is, so elsewhere (~/.ssh, /etc/cron.d) it would plant files.

The other folders (home, hf_cache, state_dir) are validated at load instead (spec.py): what is
written under them has a fixed shape. The hosts a file names are trust items where they would
receive secrets or data (cluster/hosts.py). Pure but for reading the ssh_config file."""

from __future__ import annotations

import posixpath
import sys
from collections.abc import Callable
from pathlib import Path

from sm121.cluster.spec import Cluster, Node
from sm121.errors import Sm121Error
from sm121.safe_paths import is_under

COMPILE_CACHE_ROOT = "~/.cache"
# ssh_config directives that only say where to connect, how to authenticate and how to keep
# the link: none runs a program, writes a file, forwards a port or the agent, or sends env.
SAFE_SSH_DIRECTIVES = (
    "Host", "HostName", "User", "Port", "IdentitiesOnly", "HashKnownHosts", "BatchMode",
    "LogLevel", "ConnectTimeout", "ConnectionAttempts", "ServerAliveInterval",
    "ServerAliveCountMax", "TCPKeepAlive", "Compression", "AddressFamily",
    "PreferredAuthentications", "PubkeyAuthentication", "PasswordAuthentication",
    "KbdInteractiveAuthentication", "Ciphers", "MACs", "KexAlgorithms", "HostKeyAlgorithms",
    "PubkeyAcceptedAlgorithms", "IPQoS", "RekeyLimit",
)
# Directives safe with some values only. A host key check that is not `yes` accepts (and
# with accept-new writes) a key; UpdateHostKeys and CheckHostIP write the known-hosts file;
# a key or certificate is read from ~/.ssh only (elsewhere it is whatever file the cluster
# file names, offered to its host). UserKnownHostsFile, GlobalKnownHostsFile, ControlPath,
# ControlMaster and ControlPersist name files ssh writes (a key line appended to ~/.bashrc)
# or processes it leaves running: they are on neither list, so they need --trust.
SSH_KEY_FOLDER = "~/.ssh"
_SAFE_VALUES: dict[str, tuple[str, Callable[[str], bool]]] = {
    "stricthostkeychecking": ("yes", lambda v: v.lower() == "yes"),
    "updatehostkeys": ("no", lambda v: v.lower() == "no"),
    "checkhostip": ("no", lambda v: v.lower() == "no"),
    "identityfile": (f"a file under {SSH_KEY_FOLDER}/", lambda v: _under_ssh_folder(v)),
    "certificatefile": (f"a file under {SSH_KEY_FOLDER}/", lambda v: _under_ssh_folder(v)),
}
_SAFE = frozenset(d.lower() for d in SAFE_SSH_DIRECTIVES)  # ssh reads keywords in any case


def _under_ssh_folder(value: str) -> bool:
    path = value.strip('"').replace("%d/", "~/", 1)  # %d: the user's home
    normal = posixpath.normpath(path)
    return path.startswith(SSH_KEY_FOLDER + "/") and is_under(normal, SSH_KEY_FOLDER) \
        and "%" not in path


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
    """Why an ssh_config file needs trust (a directive, or a directive's value, off the
    allow-list), or None."""
    try:
        text = Path(path).expanduser().read_text()
    except (OSError, UnicodeDecodeError) as exc:
        return f"cannot be read here to check it ({exc.__class__.__name__})"
    unsafe: list[str] = []
    for line in text.splitlines():
        words = line.strip().replace("=", " ", 1).split()
        if not words or words[0].startswith("#"):
            continue
        keyword, value = words[0].lower(), " ".join(words[1:])
        rule = _SAFE_VALUES.get(keyword)
        if rule is not None:
            if not rule[1](value):
                unsafe.append(f"{words[0]} {value} (allowed: {rule[0]})")
        elif keyword not in _SAFE:
            unsafe.append(words[0])
    if unsafe:
        return (f"has directives that may run programs, write files or expose this machine: "
                f"{', '.join(dict.fromkeys(unsafe))} (allowed without --trust: "
                f"{', '.join(SAFE_SSH_DIRECTIVES)}, and StrictHostKeyChecking yes, "
                f"UpdateHostKeys no, CheckHostIP no, IdentityFile and CertificateFile under "
                f"{SSH_KEY_FOLDER}/; docs/stranger-data.md says why)")
    return None


def require_cluster_trust(source: str, needs: list[str], trust: bool) -> None:
    """Refuse, listing every item, unless the user gave --trust."""
    if needs and not trust:
        raise Sm121Error(f"cluster file {source} asks to run on this machine or the nodes:\n"
                         "  - " + "\n  - ".join(needs),
                         "read each item, then rerun with --trust to allow them")
