"""Local processes: start in their own process group, check and stop by group id.

Never by name pattern: `pkill -f` matches itself (and across SSH matches the ssh command).
And never by a bare id: a pid is reused once its process is gone (and all of them after a
reboot), so a group is signalled only while its leader has the boot id and start time
recorded when sm121 started it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path


def spawn(argv: Sequence[str], env: Mapping[str, str], log_path: Path, cwd: Path | None = None
          ) -> subprocess.Popen[bytes]:
    """Start argv in a new session (its own process group), stdout and stderr to log_path."""
    with open(log_path, "ab") as log:
        return subprocess.Popen(
            list(argv), env=dict(env), stdout=log, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, cwd=cwd, start_new_session=True,
        )


BOOT_ID_FILE = Path("/proc/sys/kernel/random/boot_id")


@dataclass(frozen=True)
class Identity:
    """What tells the process sm121 started from a later one with the same pid."""

    boot_id: str | None
    start_time: str | None  # field 22 of /proc/PID/stat: clock ticks since boot


def boot_id() -> str:
    return BOOT_ID_FILE.read_text().strip()


def start_time(pid: int) -> str | None:
    try:
        stat = Path(f"/proc/{int(pid)}/stat").read_text()
    except OSError:
        return None
    # Fields after the command name, which is in parentheses and may hold spaces.
    return stat.rsplit(")", 1)[1].split()[19]


def identity(pid: int) -> Identity:
    return Identity(boot_id=boot_id(), start_time=start_time(pid))


def is_same_group(pgid: int, recorded: Identity) -> bool:
    """The group sm121 started still has live members: its leader is the recorded process,
    or the leader has exited and members remain (an engine's workers, a shell's children).

    Why members alone are enough: while any member of a group lives, the kernel gives its id
    to no new process, so a leaderless group with that id is the recorded one, unless that
    group died out entirely and the id came back as a new group whose leader exited too. The
    start times narrow that down: every member started (in this boot) no earlier than the
    recorded leader. A leader alive with another start time is a reused id: never ours."""
    if not recorded.boot_id or not recorded.start_time or recorded.boot_id != boot_id():
        return False
    leader = start_time(pgid)
    if leader is not None:
        return leader == recorded.start_time
    starts = [started for _, started in _members(pgid)]
    return bool(starts) and all(int(t) >= int(recorded.start_time) for t in starts)


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes of a process group, read from /proc."""
    return [pid for pid, _ in _members(pgid)]


def _members(pgid: int) -> list[tuple[int, str]]:
    """(pid, start time) of each live (non-zombie) process of the group."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # Fields after the command name, which is in parentheses and may hold spaces.
        fields = stat.rsplit(")", 1)[1].split()
        state, group = fields[0], int(fields[2])
        if group == pgid and state != "Z":
            members.append((int(entry.name), fields[19]))
    return members


def group_alive(pgid: int) -> bool:
    return bool(group_members(pgid))


def group_alive_as(pgid: int, recorded: Identity) -> bool:
    """The recorded group is still running (is_same_group), whether or not its leader is."""
    return is_same_group(pgid, recorded) and group_alive(pgid)


def stop_group(pgid: int, recorded: Identity, grace_s: float = 20.0) -> bool:
    """SIGTERM the group, then SIGKILL after grace_s. True when nothing of it is left. Not
    signalled at all unless it is the recorded group (is_same_group: its leader, or members
    that outlived it); while any member lives, the kernel keeps the group id from reuse, so
    the later signals reach only that group."""
    if not is_same_group(pgid, recorded) or not _signal_group(pgid, signal.SIGTERM):
        return True
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        if not group_alive(pgid):
            return True
        time.sleep(0.2)
    _signal_group(pgid, signal.SIGKILL)
    # A loaded host can take seconds to tear down a large process after SIGKILL.
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if not group_alive(pgid):
            return True
        time.sleep(0.1)
    return not group_alive(pgid)


def _signal_group(pgid: int, sig: signal.Signals) -> bool:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
