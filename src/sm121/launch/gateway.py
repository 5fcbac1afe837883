"""Start the gateway in front of a served run (`sm121 serve ... --gateway`).

The gateway runs as its own process group, recorded in the run as one more process named
"gateway", so `sm121 stop RUN` and `sm121 status` treat it like the engine's own processes.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

from sm121.errors import Sm121Error
from sm121.launch import processes
from sm121.launch.readiness import api_answers, port_in_use
from sm121.launch.run_state import NodeProcess, RunInfo

NAME = "gateway"
LOG_NAME = "gateway.log"
_READY_TIMEOUT_S = 60.0


def start_gateway(run: RunInfo, recipe: str, profile: str | None, port: int,
                  progress: Callable[[str], None] = lambda _: None,
                  registry: Path | None = None) -> str:
    """Start it, wait until a request passes through it to the engine, return its URL.
    With `registry` (a file of upstreams, this run's among them) the gateway routes to what
    the file lists and follows its changes (`serve --gateway-join`)."""
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
    log = run.directory / LOG_NAME
    process = processes.spawn(argv, os.environ, log)
    pid_file = run.directory / "gateway.pid"
    pid_file.write_text(f"{process.pid}\n")
    run.nodes.append(NodeProcess(name=NAME, pid=process.pid, pgid=process.pid, log=str(log),
                                 pid_file=str(pid_file)))
    run.save()
    url = f"http://127.0.0.1:{port}"
    progress(f"gateway: starting on {url} ...")
    deadline = time.monotonic() + _READY_TIMEOUT_S
    # Through the gateway, /v1/models answers from the engine behind it.
    while not api_answers(url, timeout_s=5):
        if process.poll() is not None or time.monotonic() > deadline:
            processes.stop_group(process.pid)
            tail = log.read_text(errors="replace").splitlines()[-10:]
            raise Sm121Error("the gateway did not start:\n    " + "\n    ".join(tail),
                             f"the engine keeps running; stop it with `sm121 stop {run.run_id}`")
        time.sleep(0.3)
    return url

