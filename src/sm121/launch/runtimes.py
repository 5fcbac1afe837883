"""Start, check and stop the engine on one node, natively or in docker, as POSIX shell scripts
run through a transport (this machine or ssh). The scripts are pure functions of the plan, so
the exact commands are testable where no docker engine runs.

Every value that comes from a plan, a recipe or a cluster file is quoted with shlex.quote.
Secrets never appear in a script: they arrive on the script's stdin as NAME=value lines.
"""

from __future__ import annotations

import os
import posixpath
import shlex
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from string import Template

from sm121.errors import Sm121Error
from sm121.hosts.python import this_python
from sm121.names import NAME_PATTERN
from sm121.plan.model import NodePlan
from sm121.plan.runtime_argv import expand_home, expand_mounts
from sm121.safe_paths import under_root

q = shlex.quote

BOOT_ID = "/proc/sys/kernel/random/boot_id"
# Field 22 of /proc/PID/stat (start time in clock ticks since boot); the command name before
# it is in parentheses and may hold spaces, so cut after its last ") ".
START_TIME = "sed 's/^.*) //' /proc/{pid}/stat 2> /dev/null | cut -d' ' -f20"
# A variable an env value refers to arrives on stdin under this prefix, so the node expands
# the reference without the variable itself entering the engine's environment (`${HOME}`
# from this machine must not replace the node's HOME).
REF_PREFIX = "SM121_REF_"
# Runs argv in a new session (so its pid is its process group id) and writes that pid first.
_SESSION = "setsid sh -c 'echo $$ > \"$1\"; shift; exec \"$@\"' sm121-start"
_READ_SECRETS = ('while IFS= read -r line; do [ -n "$line" ] && export "$line"; done')
_WAIT_PID = ('i=0; while [ ! -s {pid} ]; do i=$((i+1)); if [ "$i" -gt 100 ]; then '
             'echo "the process wrote no pid file" >&2; exit 1; fi; sleep 0.1; done; '
             'pid=$(cat {pid}); echo "$pid $(cat ' + BOOT_ID + ') $(' + START_TIME.format(pid="$pid")
             + ')"')


@dataclass(frozen=True)
class NodeFiles:
    """Where a run keeps its files on a node."""

    run_dir: str

    @property
    def log(self) -> str:
        return f"{self.run_dir}/engine.log"

    @property
    def pid_file(self) -> str:
        return f"{self.run_dir}/engine.pid"

    @property
    def hook_log(self) -> str:
        return f"{self.run_dir}/hooks.log"


def node_files(state_dir: str, home: str, run_id: str, node_name: str) -> NodeFiles:
    """The run's folder on a node: state_dir/runs/RUN/NODE, checked to stay there."""
    runs = posixpath.join(posixpath.normpath(expand_home(state_dir, home)), "runs")
    if not all(NAME_PATTERN.fullmatch(n) for n in (run_id, node_name)):
        raise Sm121Error(f"{node_name}: the run folder {runs}/{run_id}/{node_name} is not "
                         f"under {runs}",
                         "run ids and node names are plain words (letters, digits, _ . -)")
    return NodeFiles(run_dir=under_root(runs, run_id, node_name))


def resolved_argv(node: NodePlan, home: str) -> list[str]:
    """The argv as it will run: `~` in docker mounts expanded with the node's home, and
    `python` on this machine meaning the interpreter that runs sm121 (the one that has the
    engine). ${VAR} references stay as written: the node expands them (see start scripts)."""
    argv = list(node.argv)
    if node.runtime == "docker":
        argv = expand_mounts(argv, home)
    else:
        argv = this_python(argv, on_this_machine=node.ssh is None)
    return argv


def sent_refs(node: NodePlan, env: Mapping[str, str] | None = None) -> list[str]:
    """The variables the node's env values refer to (`${HF_TOKEN}`) that this machine's
    environment has: they travel on stdin, and the node's shell expands the references."""
    source = os.environ if env is None else env
    names = dict.fromkeys(n for v in node.env.values() for n in referenced(v))
    return [n for n in names if n in source and "\n" not in source[n]]


def secret_input(node: NodePlan, env: Mapping[str, str] | None = None) -> str:
    """The start script's stdin as NAME=value lines: the node's secrets under their names,
    the referenced variables under REF_PREFIX. Never argv, never the ssh command line."""
    source = os.environ if env is None else env
    secrets = [n for n in node.pass_env if n in source and "\n" not in source[n]]
    return ("".join(f"{name}={source[name]}\n" for name in secrets)
            + "".join(f"{REF_PREFIX}{name}={source[name]}\n" for name in sent_refs(node, source)))


def referenced(value: str) -> list[str]:
    """The names a value refers to as $NAME or ${NAME}."""
    return [m.group("named") or m.group("braced")
            for m in Template.pattern.finditer(value) if m.group("named") or m.group("braced")]


def shell_value(value: str, refs: Collection[str]) -> str:
    """`value` as one shell word: its text single-quoted, and each reference to a variable in
    refs as "${SM121_REF_NAME}", which the node's shell expands without evaluating anything.
    Any other reference stays as written (as Template.safe_substitute leaves it)."""
    parts, at = [], 0
    for match in Template.pattern.finditer(value):
        name = match.group("named") or match.group("braced")
        if match.group("escaped") is None and name not in refs:
            continue  # kept literally with the text around it
        parts += [q(value[at:match.start()]) if match.start() > at else "",
                  "'$'" if match.group("escaped") is not None else f'"${{{REF_PREFIX}{name}}}"']
        at = match.end()
    parts.append(q(value[at:]) if at < len(value) or not parts else "")
    return "".join(parts)


def native_start_script(argv: Sequence[str], env: Mapping[str, str], files: NodeFiles,
                        secrets: bool = False, refs: Collection[str] = ()) -> str:
    """Start argv in its own process group with the node's env (references in it expanded on
    the node); print its pid (= group id), the node's boot id and the process's start time,
    so stop can tell it from a later process that reuses the pid."""
    # `--` ends env's options: no assignment can be read as one (`--split-string=...`).
    env_prefix = ["env", *(f"-u {q(REF_PREFIX + n)}" for n in refs), "--",
                  *(q(f"{k}=") + shell_value(v, refs) for k, v in env.items())]
    command = " ".join([*(env_prefix if env or refs else []), *(q(a) for a in argv)])
    return "\n".join([
        "set -e", "umask 077", f"mkdir -p {q(files.run_dir)}",
        _READ_SECRETS if secrets else ":",
        f"cd {q(files.run_dir)}",
        # A restart in the same run folder finds the last start's pid file: without this the
        # wait below could read that old pid before the new process writes its own.
        f"rm -f {q(files.pid_file)}",
        f"{_SESSION} {q(files.pid_file)} {command} > {q(files.log)} 2>&1 < /dev/null &",
        _WAIT_PID.format(pid=q(files.pid_file)),
    ])


def docker_start_script(argv: Sequence[str], container: str, files: NodeFiles,
                        secrets: bool = False, refs: Collection[str] = ()) -> str:
    """`docker run -d ...`, refusing to replace a container of the same name; then follow its
    output into the run's log file, so both runtimes leave the same engine.log on the node.
    An env value that refers to a variable sent on stdin is exported by the script and passed
    by name (`-e NAME`), so its value is on no command line. Prints the container id."""
    name = q(container)
    follower_pid = q(f"{files.run_dir}/logs.pid")
    clash = (f"a container named {container} already exists on this node: stop its run or "
             f"remove it (docker rm -f {container})")
    exports, words = [], []
    for index, arg in enumerate(argv[2:], start=2):
        key, _, value = arg.partition("=")
        if argv[index - 1] == "-e" and set(referenced(value)) & set(refs):
            exports.append(f"export {q(key)}={shell_value(value, refs)}")
            words.append(q(key))
        else:
            words.append(q(arg))
    return "\n".join([
        "set -e", "umask 077", f"mkdir -p {q(files.run_dir)}",
        _READ_SECRETS if secrets else ":", *exports,
        f"if docker container inspect {name} > /dev/null 2>&1; then echo {q(clash)} >&2; "
        "exit 3; fi",
        f"docker run {' '.join(words)} > {q(files.run_dir + '/container.id')}",
        f"{_SESSION} {follower_pid} docker logs -f {name} > {q(files.log)} 2>&1 < /dev/null &",
        f"cat {q(files.run_dir + '/container.id')}",
    ])


def started_native_script(files: NodeFiles) -> str:
    """What the native start script prints, read back from the node's run folder."""
    pid = q(files.pid_file)
    return (f'if [ -s {pid} ]; then pid=$(cat {pid}); echo "$pid $(cat {BOOT_ID}) '
            f'$({START_TIME.format(pid="$pid")})"; fi')


def started_docker_script(files: NodeFiles) -> str:
    return f"cat {q(files.run_dir + '/container.id')} 2> /dev/null || true"


def same_process_test(pgid: int, boot_id: str | None, start_time: str | None) -> str:
    """A shell test that holds while the group is the one sm121 started (processes.
    is_same_group, read on the node): same boot, and the leader is the recorded process (same
    start time), or the leader has exited and every live member started no earlier than it (an
    engine's workers outliving the shell that led them). A pid reused after the engine exited
    (or after a reboot) fails it. A run recorded without them (an older sm121) fails it too: it
    is never signalled."""
    if not boot_id or not start_time:
        return "false"
    group, start = int(pgid), int(start_time)
    leader = START_TIME.format(pid=group)
    # Each /proc/PID/stat after its last ") ": state is field 1, the group field 3, the start
    # time field 20. `set --` splits only that tail, which holds no user text.
    # `read`, not `$(cat)`: a process per /proc entry made each check take seconds on a
    # loaded host with a few hundred processes.
    members = ("{ n=0; for f in /proc/[0-9]*/stat; do read -r s 2> /dev/null < \"$f\" || continue; "
               "set -- ${s##*) }; "
               f'[ "$3" = {group} ] && [ "$1" != Z ] || continue; '
               f'[ "${{20}}" -ge {start} ] || exit 1; n=1; done; [ "$n" = 1 ]; }}')
    return (f'[ "$(cat {BOOT_ID} 2> /dev/null)" = {q(boot_id)} ] && '
            f'if [ -e /proc/{group}/stat ]; then [ "$({leader})" = {q(start_time)} ]; '
            f"else ( {members} ); fi")


def group_lives_test(pgid: int) -> str:
    """A shell test that holds while a live (non-zombie) process is in the group: processes.
    group_alive, read on the node. `kill -0 -PGID` alone is not that test: it holds while an
    exited member waits to be reaped, and a node whose init reaps orphans late (a container's
    PID 1) would read as an engine that would not stop (a CI run's `sm121 stop` reported
    a node so; the local stop has always read zombies as gone).
    The /proc walk runs only while `kill -0` holds, with `read` (no process per entry)."""
    group = int(pgid)
    members = ('for f in /proc/[0-9]*/stat; do read -r s 2> /dev/null < "$f" || continue; '
               "set -- ${s##*) }; "
               f'[ "$3" = {group} ] && [ "$1" != Z ] && exit 0; done; exit 1')
    return f"{{ kill -0 -{group} 2> /dev/null && ( {members} ); }}"


def group_alive_script(pgid: int, boot_id: str | None, start_time: str | None) -> str:
    return (f"if {same_process_test(pgid, boot_id, start_time)} && {group_lives_test(pgid)}; "
            "then echo alive; else echo gone; fi")


def group_stop_script(pgid: int, boot_id: str | None, start_time: str | None,
                      grace_s: float = 20.0) -> str:
    """SIGTERM the group, SIGKILL after the grace time; print what is left. Nothing is
    signalled unless the group is still the one sm121 started (same_process_test). While any member lives
    the kernel keeps its group id from reuse, so the later signals reach only that group."""
    group = f"-{int(pgid)}"
    lives = group_lives_test(pgid)  # a zombie member is gone, as the local stop reads it
    ticks = max(1, int(grace_s * 5))
    return "\n".join([
        f"{same_process_test(pgid, boot_id, start_time)} || {{ echo gone; exit 0; }}",
        f"kill -TERM {group} 2> /dev/null || {{ echo gone; exit 0; }}",
        f"i=0; while {lives}; do i=$((i+1)); "
        f"if [ \"$i\" -ge {ticks} ]; then kill -KILL {group} 2> /dev/null; break; fi; "
        "sleep 0.2; done",
        # As the local stop does: a loaded host tears large processes down slowly after KILL.
        f"j=0; while {lives} && [ \"$j\" -lt 150 ]; do j=$((j+1)); "
        "sleep 0.2; done",
        f"if {lives}; then echo alive; else echo gone; fi",
    ])


def same_container_test(container: str, container_id: str | None) -> str:
    """Holds only while the container of that name is the one sm121 started (by its id)."""
    if not container_id:
        return "false"
    return (f"[ \"$(docker container inspect -f '{{{{.Id}}}}' {q(container)} 2> /dev/null)\" "
            f"= {q(container_id)} ]")


def container_alive_script(container: str, container_id: str | None) -> str:
    return (f"if {same_container_test(container, container_id)} && [ \"$(docker container "
            f"inspect -f '{{{{.State.Running}}}}' {q(container_id or '')} 2> /dev/null)\" = true ]; "
            "then echo alive; else echo gone; fi")


def container_stop_script(container: str, container_id: str | None, follower_pid_file: str,
                          grace_s: int = 30) -> str:
    """Stop and remove the container sm121 started, by id (the log stays in the run directory
    on the node), and the `docker logs -f` that copied its output. A container of the same
    name started by someone else is left alone."""
    ident = q(container_id or "")
    follower = q(follower_pid_file)
    return "\n".join([
        f"{same_container_test(container, container_id)} || {{ echo gone; exit 0; }}",
        f"docker stop -t {int(grace_s)} {ident} > /dev/null 2>&1 || true",
        f"docker rm -f {ident} > /dev/null 2>&1 || true",
        # The follower ends with its container; if it lingers, stop it, checking first that
        # the pid is still a `docker logs` (a pid is reused once its process is gone).
        f"p=$(cat {follower} 2> /dev/null || true); if [ -n \"$p\" ] && tr '\\0' ' ' < "
        f"/proc/\"$p\"/cmdline 2> /dev/null | grep -q 'docker logs -f'; then "
        "kill -TERM -\"$p\" 2> /dev/null || true; fi",
        f"if docker container inspect {ident} > /dev/null 2>&1; then echo alive; "
        "else echo gone; fi",
    ])
