"""A long copy on a node (rsync, tar | ssh, docker save | ssh) that never outlives sm121.

The script runs in its own process group (setsid, util-linux) under a watcher that reads the
job's stdin: sm121 holds that pipe open, so when sm121 exits, is killed (even SIGKILL) or the
ssh link drops, the watcher sees end-of-file and stops the whole group. A remote command without a terminal
gets no SIGHUP, so without the watcher an interrupted stage would leave rsync running."""

from __future__ import annotations

import contextlib
import shlex
import subprocess
import threading

from sm121.errors import Sm121Error
from sm121.hosts.transport import CommandResult, LocalTransport, SshTransport, Transport

# $1 is the job's script. setsid puts the job in its own session and process group (its pid
# is the group id: a background child of a shell is no group leader, so setsid does not fork),
# so one kill reaches every process of a pipeline. fd 3 keeps sm121's pipe for the watcher:
# an asynchronous command's stdin would otherwise be /dev/null.
WRAPPER = r"""exec 3<&0
setsid sh -c "$1" </dev/null 3<&- &
job=$!
(cat <&3 >/dev/null 2>&1; kill -TERM -"$job" 2>/dev/null) </dev/null >/dev/null 2>&1 &
watch=$!
wait "$job"
rc=$?
kill "$watch" 2>/dev/null
exit "$rc"
"""


_live: set[Job] = set()
_lock = threading.Lock()


def stop_all() -> None:
    """Stop every job still running (Ctrl-C, SIGTERM): no copy outlives the command."""
    with _lock:
        jobs = list(_live)
    for job in jobs:
        job.stop()


class Job:
    """One script running on a node; `wait()` for its end, `stop()` to end it now."""

    def __init__(self, transport: Transport, script: str) -> None:
        self.where = transport.name
        argv = ["sh", "-c", WRAPPER, "sm121-stage", script]
        if isinstance(transport, SshTransport):
            command = [*transport.ssh_argv(), shlex.join(argv)]
        elif isinstance(transport, LocalTransport):
            command = argv
        else:
            raise Sm121Error(f"{transport.name}: cannot run a copy job there",
                             "use a local or ssh node")
        try:
            self._process = subprocess.Popen(command, stdin=subprocess.PIPE,
                                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        except FileNotFoundError as exc:
            raise Sm121Error(f"{self.where}: {command[0]} is not installed",
                             f"install {command[0]}") from exc
        with _lock:
            _live.add(self)
        self._out: list[bytes] = []
        self._err: list[bytes] = []
        self._readers = [threading.Thread(target=self._drain, args=(stream, sink), daemon=True)
                         for stream, sink in ((self._process.stdout, self._out),
                                              (self._process.stderr, self._err))]
        for reader in self._readers:
            reader.start()

    @staticmethod
    def _drain(stream: object, sink: list[bytes]) -> None:
        assert hasattr(stream, "read")
        while chunk := stream.read(65536):
            sink.append(chunk)

    def stderr_so_far(self) -> str:
        """What the job wrote to stderr until now (dd's progress counts of an image stream)."""
        return b"".join(list(self._err)).decode(errors="replace")

    def wait(self, timeout: float | None = None) -> CommandResult:
        try:
            code = self._process.wait(timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            self.stop()
            raise Sm121Error(f"{self.where}: a copy did not finish in {timeout:.0f} s",
                             "check the link between the nodes") from exc
        for reader in self._readers:
            reader.join(timeout=10)
        self._close_stdin()
        with _lock:
            _live.discard(self)
        return CommandResult(code, b"".join(self._out).decode(errors="replace"),
                         b"".join(self._err).decode(errors="replace"))

    def stop(self) -> None:
        """End the job: closing its stdin makes the watcher stop its process group."""
        self._close_stdin()
        try:
            self._process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait(timeout=10)

    def _close_stdin(self) -> None:
        if self._process.stdin and not self._process.stdin.closed:
            with contextlib.suppress(OSError):
                self._process.stdin.close()
