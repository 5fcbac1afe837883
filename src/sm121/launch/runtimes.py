"""Start, check and stop the engine on one node, natively or in docker, as POSIX shell scripts
run through a transport (this machine or ssh). The scripts are pure functions of the plan, so
the exact commands are testable where no docker engine runs.

Every value that comes from a plan, a recipe or a cluster file is quoted with shlex.quote.
Secrets never appear in a script: they arrive on the script's stdin as NAME=value lines.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from string import Template

from sm121.plan.model import NodePlan
from sm121.plan.runtime_argv import expand_home, expand_mounts

q = shlex.quote

# Runs argv in a new session (so its pid is its process group id) and writes that pid first.
_SESSION = "setsid sh -c 'echo $$ > \"$1\"; shift; exec \"$@\"' sm121-start"
_READ_SECRETS = ('while IFS= read -r line; do [ -n "$line" ] && export "$line"; done')
_WAIT_PID = ('i=0; while [ ! -s {pid} ]; do i=$((i+1)); if [ "$i" -gt 100 ]; then '
             'echo "the process wrote no pid file" >&2; exit 1; fi; sleep 0.1; done; cat {pid}')


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
    root = expand_home(state_dir, home).rstrip("/")
    return NodeFiles(run_dir=f"{root}/runs/{run_id}/{node_name}")


def resolved_argv(node: NodePlan, home: str, env: Mapping[str, str] | None = None) -> list[str]:
    """The argv as it will run: `~` in docker mounts expanded with the node's home, ${VAR} in
    docker -e values from the launcher's environment, and `python` on this machine meaning the
    interpreter that runs sm121 (the one that has the engine)."""
    argv = list(node.argv)
    if node.runtime == "docker":
        source = dict(os.environ if env is None else env)
        argv = expand_mounts(argv, home)
        argv = [Template(a).safe_substitute(source) if i and argv[i - 1] == "-e" else a
                for i, a in enumerate(argv)]
    elif node.ssh is None and argv[0] == "python":
        argv[0] = sys.executable
    return argv


def resolved_env(node: NodePlan, env: Mapping[str, str] | None = None) -> dict[str, str]:
    source = dict(os.environ if env is None else env)
    return {k: Template(v).safe_substitute(source) for k, v in node.env.items()}


def secret_input(node: NodePlan, env: Mapping[str, str] | None = None) -> str:
    """The node's secrets as NAME=value lines for the start script's stdin (never argv)."""
    source = os.environ if env is None else env
    return "".join(f"{name}={source[name]}\n" for name in node.pass_env
                   if name in source and "\n" not in source[name])


def native_start_script(argv: Sequence[str], env: Mapping[str, str], files: NodeFiles,
                        secrets: bool) -> str:
    """Start argv in its own process group with the node's env; print its pid (= group id)."""
    env_prefix = ["env", *(f"{k}={v}" for k, v in env.items())] if env else []
    command = " ".join(q(a) for a in [*env_prefix, *argv])
    return "\n".join([
        "set -e", "umask 077", f"mkdir -p {q(files.run_dir)}",
        _READ_SECRETS if secrets else ":",
        f"cd {q(files.run_dir)}",
        f"{_SESSION} {q(files.pid_file)} {command} > {q(files.log)} 2>&1 < /dev/null &",
        _WAIT_PID.format(pid=q(files.pid_file)),
    ])


def docker_start_script(argv: Sequence[str], container: str, files: NodeFiles,
                        secrets: bool) -> str:
    """`docker run -d ...`, refusing to replace a container of the same name; then follow its
    output into the run's log file, so both runtimes leave the same engine.log on the node."""
    name = q(container)
    follower_pid = q(f"{files.run_dir}/logs.pid")
    return "\n".join([
        "set -e", "umask 077", f"mkdir -p {q(files.run_dir)}",
        _READ_SECRETS if secrets else ":",
        f"if docker container inspect {name} > /dev/null 2>&1; then "
        f"echo \"a container named {container} already exists on this node: stop its run or "
        f"remove it (docker rm -f {container})\" >&2; exit 3; fi",
        f"docker run {' '.join(q(a) for a in argv[2:])} > {q(files.run_dir + '/container.id')}",
        f"{_SESSION} {follower_pid} docker logs -f {name} > {q(files.log)} 2>&1 < /dev/null &",
        f"cat {q(files.run_dir + '/container.id')}",
    ])


def group_alive_script(pgid: int) -> str:
    return f"if kill -0 -{int(pgid)} 2> /dev/null; then echo alive; else echo gone; fi"


def group_stop_script(pgid: int, grace_s: float = 20.0) -> str:
    """SIGTERM the group, SIGKILL after the grace time; print what is left."""
    group = f"-{int(pgid)}"
    ticks = max(1, int(grace_s * 5))
    return "\n".join([
        f"kill -TERM {group} 2> /dev/null || {{ echo gone; exit 0; }}",
        f"i=0; while kill -0 {group} 2> /dev/null; do i=$((i+1)); "
        f"if [ \"$i\" -ge {ticks} ]; then kill -KILL {group} 2> /dev/null; break; fi; "
        "sleep 0.2; done",
        # As the local stop does: a loaded host tears large processes down slowly after KILL.
        f"j=0; while kill -0 {group} 2> /dev/null && [ \"$j\" -lt 150 ]; do j=$((j+1)); "
        "sleep 0.2; done",
        group_alive_script(pgid),
    ])


def container_alive_script(container: str) -> str:
    return (f"if [ \"$(docker container inspect -f '{{{{.State.Running}}}}' {q(container)} "
            "2> /dev/null)\" = true ]; then echo alive; else echo gone; fi")


def container_stop_script(container: str, grace_s: int = 30) -> str:
    """Stop and remove the container (the log stays in the run directory on the node)."""
    name = q(container)
    return "\n".join([
        f"docker stop -t {int(grace_s)} {name} > /dev/null 2>&1 || true",
        f"docker rm -f {name} > /dev/null 2>&1 || true",
        f"if docker container inspect {name} > /dev/null 2>&1; then echo alive; "
        "else echo gone; fi",
    ])
