"""Start the gateway in front of a served run (`sm121 serve ... --gateway`).

The gateway runs as its own process group, recorded in the run as one more process named
"gateway", so `sm121 stop RUN` and `sm121 status` treat it like the engine's own processes.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from sm121.engines.api_key import api_key
from sm121.errors import Sm121Error
from sm121.hosts import processes
from sm121.launch.readiness import NotReady, api_answers, port_in_use
from sm121.runs.state import NodeProcess, RunInfo, update_run

NAME = "gateway"
LOG_NAME = "gateway.log"
_READY_TIMEOUT_S = 60.0


def start_gateway(run: RunInfo, recipe: str, profile: str | None, port: int,
                  progress: Callable[[str], None] = lambda _: None,
                  max_inflight: int | None = None, registry: Path | None = None) -> str:
    """Start it, wait until a request passes through it to the engine, return its URL.
    With `registry` (a file of upstreams, this run's among them) the gateway routes to what
    the file lists and follows its changes (`serve --gateway-join`); each upstream there
    carries its own policy and limits. Without it, the gateway serves this run with the
    recipe's policy, and max_inflight is the engine's max-num-seqs as served (with --set),
    which the gateway would otherwise read from the recipe alone."""
    if port_in_use("127.0.0.1", port):
        raise Sm121Error(f"gateway port {port} is already in use",
                         f"pass --gateway-port N; the engine keeps running ({run.run_id})")
    argv = [sys.executable, "-m", "sm121.cli.main", "gateway", "--listen", f"127.0.0.1:{port}"]
    if registry is not None:
        argv += ["--registry", str(registry)]
    else:
        argv += ["--upstream", run.base_url, "--recipe", recipe]
        if profile:
            argv += ["--profile", profile]
        if max_inflight:
            argv += ["--max-inflight", str(max_inflight)]
    log = run.directory / LOG_NAME
    process = processes.spawn(argv, os.environ, log)
    pid_file = run.directory / "gateway.pid"
    pid_file.write_text(f"{process.pid}\n")
    started = processes.identity(process.pid)
    node = NodeProcess(name=NAME, pid=process.pid, pgid=process.pid, log=str(log),
                       pid_file=str(pid_file), boot_id=started.boot_id,
                       start_time=started.start_time)
    url = f"http://127.0.0.1:{port}"

    def record(current: RunInfo) -> None:
        current.nodes.append(node)
        current.gateway_url = url

    record(run)
    # On the saved run, not the caller's copy: a supervised run's watchdog may have saved a
    # restarted engine since, and `stop` needs both that engine and this gateway.
    update_run(run.run_id, record)
    progress(f"gateway: starting on {url} ...")
    deadline = time.monotonic() + _READY_TIMEOUT_S
    # Through the gateway, /v1/models answers from the engine behind it.
    key = api_key(engine_first=True)
    try:
        _wait_answers(url, key, process, log, run.run_id, deadline)
    except BaseException:
        processes.stop_group(process.pid, started)
        raise
    return url


def _wait_answers(url: str, key: str | None, process: subprocess.Popen[bytes], log: Path,
                  run_id: str, deadline: float) -> None:
    while not _answers(url, key):
        if process.poll() is not None or time.monotonic() > deadline:
            tail = log.read_text(errors="replace").splitlines()[-10:]
            raise Sm121Error("the gateway did not start:\n    " + "\n    ".join(tail),
                             f"the engine keeps running; stop it with `sm121 stop {run_id}`")
        time.sleep(0.3)


def _answers(url: str, key: str | None) -> bool:
    try:
        return api_answers(url, timeout_s=5, api_key=key)
    except NotReady as exc:  # a 401: the key is missing or wrong, waiting cannot help
        raise Sm121Error(f"the gateway refused sm121's check: {exc}",
                         "set the key, then `sm121 stop RUN` and serve again") from exc

