"""Run a command on a node: this machine, or over the system OpenSSH client.

OpenSSH honours ~/.ssh/config, and ControlMaster multiplexing makes the many short commands of
a launch cheap. Remote commands are argv lists joined with shlex quoting: no user string ever
reaches the remote shell unquoted."""

from __future__ import annotations

import shlex
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sm121 import paths
from sm121.errors import Sm121Error


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
    options: tuple[str, ...] = field(default_factory=tuple)  # extra -o options (tests: keys)

    def ssh_argv(self) -> list[str]:
        control = paths.home() / "ssh"
        control.mkdir(parents=True, exist_ok=True, mode=0o700)
        argv = ["ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10",
                "-o", "ControlMaster=auto", "-o", f"ControlPath={control}/%C",
                "-o", "ControlPersist=60"]
        if self.port:
            argv += ["-p", str(self.port)]
        for option in self.options:
            argv += ["-o", option]
        return argv + [self.target]

    def run(self, argv: Sequence[str], *, input: str | None = None, timeout: float = 60
            ) -> CommandResult:
        return _completed([*self.ssh_argv(), "--", shlex.join(argv)], input, timeout,
                          self.name or self.target)


def _completed(argv: list[str], input: str | None, timeout: float, where: str) -> CommandResult:
    try:
        done = subprocess.run(argv, input=input, capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError as exc:
        raise Sm121Error(f"{where}: {argv[0]} is not installed", f"install {argv[0]}") from exc
    except subprocess.TimeoutExpired as exc:
        raise Sm121Error(f"{where}: `{shlex.join(argv[-1:])}` did not finish in {timeout:.0f} s",
                         "check that the node is reachable and not overloaded") from exc
    return CommandResult(done.returncode, done.stdout, done.stderr)


def local_path(path: str) -> Path:
    return Path(path).expanduser()
