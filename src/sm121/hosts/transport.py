"""Run a command on a node: this machine, or over the system OpenSSH client.

OpenSSH honours ~/.ssh/config, and ControlMaster multiplexing makes the many short commands of
a launch cheap. Remote commands are argv lists joined with shlex quoting: no user string ever
reaches the remote shell unquoted."""

from __future__ import annotations

import atexit
import contextlib
import os
import shlex
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sm121 import paths
from sm121.errors import Sm121Error
from sm121.names import ssh_word_problem


@dataclass(frozen=True)
class CommandResult:
    returncode: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0


class Transport:
    """A place to run commands. `run` takes argv; `run_shell` a script for `sh -c`."""

    name: str

    def run(self, argv: Sequence[str], *, input: str | None = None, timeout: float = 60
            ) -> CommandResult:
        raise NotImplementedError

    def run_shell(self, script: str, *, timeout: float = 60) -> CommandResult:
        return self.run(["sh", "-c", script], timeout=timeout)


@dataclass(frozen=True)
class LocalTransport(Transport):
    name: str = "local"

    def run(self, argv: Sequence[str], *, input: str | None = None, timeout: float = 60
            ) -> CommandResult:
        return _completed(list(argv), input, timeout, self.name)


@dataclass(frozen=True)
class SshTransport(Transport):
    target: str  # user@host or a ~/.ssh/config alias
    name: str = ""
    port: int | None = None
    config: str | None = None  # an ssh_config file (`ssh -F`); default: ~/.ssh/config
    options: tuple[str, ...] = field(default_factory=tuple)  # extra -o options

    def ssh_argv(self) -> list[str]:
        # One master per sm121 process (the pid in its path), closed when the process exits:
        # a shared master could be closed under another command's feet, and a master left
        # behind would outlive the command that opened it.
        argv = ["ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10",
                "-o", "ServerAliveInterval=15",
                "-o", "ControlMaster=auto", "-o", f"ControlPath={control_dir()}/%C-{os.getpid()}",
                "-o", "ControlPersist=60"]
        if self.config:
            argv += ["-F", str(Path(self.config).expanduser())]
        if self.port:
            argv += ["-p", str(self.port)]
        for option in self.options:
            argv += ["-o", option]
        # `--` ends ssh's options: a target can never be read as one (-oProxyCommand=...).
        return argv + ["--", self.target]

    def __post_init__(self) -> None:
        problem = ssh_word_problem(self.target)
        if problem:
            raise Sm121Error(f"{self.name or 'a node'}: the ssh target {self.target!r} {problem}",
                             "give a host name, user@host or an ssh_config alias")

    def run(self, argv: Sequence[str], *, input: str | None = None, timeout: float = 60
            ) -> CommandResult:
        _opened.add(self)
        result = _completed([*self.ssh_argv(), shlex.join(argv)], input, timeout,
                            self.name or self.target)
        if result.returncode == 255:  # ssh's own failure, not the command's
            raise Sm121Error(f"{self.name or self.target}: ssh to {self.target} failed: "
                             f"{result.stderr.strip()[-300:]}",
                             "check `ssh TARGET true` by hand: keys, host name, ssh_config")
        return result

    def close(self) -> None:
        """Stop the ControlMaster of this target, if one runs."""
        subprocess.run([*self.ssh_argv()[:-2], "-O", "exit", "--", self.target],
                       capture_output=True, stdin=subprocess.DEVNULL, timeout=10)


_opened: set[SshTransport] = set()


@atexit.register
def close_all() -> None:
    """Stop the ControlMasters this process opened."""
    for transport in list(_opened):
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            transport.close()
        _opened.discard(transport)
    if _short_dir is not None:
        shutil.rmtree(_short_dir, ignore_errors=True)


def transport_for(ssh: str | None, port: int | None = None, config: str | None = None,
                  name: str = "") -> Transport:
    """The transport of a node: this machine when it names no ssh target."""
    if ssh is None:
        return LocalTransport(name=name or "local")
    return SshTransport(target=ssh, name=name, port=port, config=config)


def control_dir() -> Path:
    """Where ControlMaster sockets live: a folder only this user can enter, since whoever can
    reach a master's socket runs commands as this user on the node. A socket path must stay
    under 108 bytes with the 40 characters of %C, the pid and the random suffix ssh adds while
    binding, so with a long $SM121_HOME it is a fresh mkdtemp folder (unpredictable, 0700)."""
    global _short_dir
    folder = paths.home() / "ssh"
    if len(str(folder)) <= 35:
        return private_dir(folder)
    if _short_dir is None or not _short_dir.is_dir():
        _short_dir = Path(tempfile.mkdtemp(prefix="sm121-ssh-"))  # removed by close_all
    return private_dir(_short_dir)


_short_dir: Path | None = None


def private_dir(folder: Path) -> Path:
    """Create folder 0700, or accept it only when it is a real folder of this user that no one
    else can enter (a folder planted by someone else would see every socket)."""
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    info = folder.lstat()
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode) \
            or info.st_uid != os.getuid():
        raise Sm121Error(f"{folder} is not a folder owned by this user",
                         "remove it (sm121 keeps its ssh sockets there), or set SM121_HOME")
    if stat.S_IMODE(info.st_mode) & 0o077:
        os.chmod(folder, 0o700)
    return folder


def _completed(argv: list[str], input: str | None, timeout: float, where: str) -> CommandResult:
    # Without input, stdin is closed: ssh must never read the user's terminal.
    stdin = subprocess.DEVNULL if input is None else None
    try:
        done = subprocess.run(argv, input=input, stdin=stdin, capture_output=True, text=True,
                              timeout=timeout)
    except FileNotFoundError as exc:
        raise Sm121Error(f"{where}: {argv[0]} is not installed", f"install {argv[0]}") from exc
    except subprocess.TimeoutExpired as exc:
        raise Sm121Error(f"{where}: `{shlex.join(argv[-1:])}` did not finish in {timeout:.0f} s",
                         "check that the node is reachable and not overloaded") from exc
    return CommandResult(done.returncode, done.stdout, done.stderr)


# Long for one `printf`: a first ssh to a loaded node (key exchange, a session, a shell) once
# took over 30 s on the 2-core testbed while two engine sessions of the suite booted.
HOME_PROBE_TIMEOUT_S = 60


def node_home(transport: Transport, name: str, local: bool) -> str:
    """A node's $HOME: this machine's own, or asked over ssh (where `~` in a cluster file's
    folders points)."""
    if local:
        return str(Path.home())
    result = transport.run(["sh", "-c", 'printf %s "$HOME"'], timeout=HOME_PROBE_TIMEOUT_S)
    if not result.ok or not result.stdout.startswith("/"):
        raise Sm121Error(f"{name}: cannot read $HOME over ssh ({result.stderr.strip()})",
                         "set `home` for this node in the cluster file")
    return result.stdout
