"""A real OpenSSH server on loopback for the multi-node tests.

One sshd listens on 127.0.0.2, 127.0.0.3, ... (one address per node) on one free port, with a
generated host key, a generated client key and its own sshd_config; nothing of the machine's
own ssh setup is read or changed. Clients reach it through the ssh_config file it writes
(`ssh -F CONFIG 127.0.0.2`), which is also what a cluster file's `ssh_config` points at.

Reuse it from any suite:

    from support.sshd import Sshd, start_sshd, sshd_available
    sshd = start_sshd(tmp_dir, nodes=2)   # sshd.hosts == ["127.0.0.2", "127.0.0.3"]
    ...
    sshd.stop()

or through the session fixture `sshd` in tests/integration/conftest.py.
"""

from __future__ import annotations

import contextlib
import getpass
import json
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from sm121.free_ports import free_port

SSHD_PATHS = ("/usr/sbin/sshd", "/usr/local/sbin/sshd")


def sshd_binary() -> str | None:
    found = [p for p in SSHD_PATHS if os.access(p, os.X_OK)]
    return found[0] if found else shutil.which("sshd")


def sshd_available() -> bool:
    return sshd_binary() is not None and shutil.which("ssh") is not None


@dataclass
class Sshd:
    hosts: list[str]
    port: int
    user: str
    folder: Path
    ssh_config: Path
    process: subprocess.Popen[bytes]

    def ssh_argv(self, host: str) -> list[str]:
        return ["ssh", "-F", str(self.ssh_config), host]

    def run(self, host: str, command: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*self.ssh_argv(host), command], capture_output=True, text=True,
                              timeout=timeout)

    def cluster_file(self, path: Path, nodes: list[dict], state_dir: Path,
                     **fields: object) -> Path:
        """A cluster YAML whose nodes are this server's hosts, in order. Each entry of `nodes`
        gives a node's name and fabric values; `ssh` is filled in (127.0.0.2, ...)."""
        entries = [{"ssh": host, **node} for host, node in zip(self.hosts, nodes, strict=False)]
        data = {"name": "loopback", "head": entries[0]["name"], "topology": "direct",
                "ssh_config": str(self.ssh_config), "state_dir": str(state_dir),
                "nodes": entries, **fields}
        path.write_text(json.dumps(data, indent=2))  # JSON is YAML
        return path

    def stop(self) -> None:
        """Stop the server by its pid (never by name)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


def start_sshd(folder: Path, nodes: int = 3, extra_config: str = "") -> Sshd:
    """`extra_config`: more sshd_config lines (e.g. `SetEnv PATH=...` to put a stand-in tool
    first on the sessions' PATH)."""
    binary = sshd_binary()
    if binary is None:
        raise RuntimeError("sshd is not installed (scripts/ensure-sshd.sh installs it)")
    folder.mkdir(parents=True, exist_ok=True)
    hosts = [f"127.0.0.{2 + i}" for i in range(nodes)]
    port = free_port(hosts)
    _keygen(folder / "host_key")
    _keygen(folder / "client_key")
    (folder / "authorized_keys").write_text((folder / "client_key.pub").read_text())
    os.chmod(folder / "authorized_keys", 0o600)
    (folder / "known_hosts").write_text("".join(
        f"[{host}]:{port} {(folder / 'host_key.pub').read_text().strip()}\n" for host in hosts))
    config = folder / "sshd_config"
    config.write_text(_sshd_config(folder, hosts, port) + extra_config)
    _privilege_separation_dir()
    process = subprocess.Popen([binary, "-D", "-e", "-f", str(config)],
                               stdout=subprocess.DEVNULL,
                               stderr=open(folder / "sshd.log", "ab"),  # noqa: SIM115
                               start_new_session=True)
    user = getpass.getuser()
    client_config = folder / "ssh_config"
    client_config.write_text(_client_config(folder, hosts, port, user))
    server = Sshd(hosts=hosts, port=port, user=user, folder=folder, ssh_config=client_config,
                  process=process)
    _wait_listening(server)
    return server


def _keygen(path: Path) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "sm121-test",
                    "-f", str(path)], check=True, capture_output=True)


def _sshd_config(folder: Path, hosts: list[str], port: int) -> str:
    listen = "".join(f"ListenAddress {host}:{port}\n" for host in hosts)
    return (
        f"{listen}"
        f"HostKey {folder / 'host_key'}\n"
        f"AuthorizedKeysFile {folder / 'authorized_keys'}\n"
        f"PidFile {folder / 'sshd.pid'}\n"
        "PubkeyAuthentication yes\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
        "PermitRootLogin prohibit-password\n"
        # tmp folders are world-readable parents; the keys are ours alone.
        "StrictModes no\nUsePAM no\n"
        # Many short commands per test over ControlMaster, plus parallel launches.
        "MaxSessions 50\nMaxStartups 50\n"
        "LogLevel ERROR\n"
    )


def _client_config(folder: Path, hosts: list[str], port: int, user: str) -> str:
    return (
        f"Host {' '.join(hosts)}\n"
        f"  Port {port}\n  User {user}\n"
        f"  IdentityFile {folder / 'client_key'}\n  IdentitiesOnly yes\n"
        f"  UserKnownHostsFile {folder / 'known_hosts'}\n  StrictHostKeyChecking yes\n"
        "  BatchMode yes\n  LogLevel ERROR\n"
    )


def _privilege_separation_dir() -> None:
    # sshd refuses to start without it; a fresh container often lacks /run/sshd. Not root:
    # sshd runs unprivileged and does without it.
    with contextlib.suppress(PermissionError):
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)


def _wait_listening(server: Sshd, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            log = (server.folder / "sshd.log").read_text(errors="replace")
            raise RuntimeError(f"sshd exited at start: {log[-2000:]}")
        if server.run(server.hosts[0], "true", timeout=10).returncode == 0:
            return
        time.sleep(0.2)
    server.stop()
    raise RuntimeError("sshd did not accept a connection in time")
