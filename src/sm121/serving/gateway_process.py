"""Start the gateway in front of a served run (`sm121 serve ... --gateway`).

The launcher builds the gateway's GatewayConfig here and hands it over as a file in the run's
folder (gateway.json, without secrets) to `python -m sm121.gateway`: the library never
speaks the CLI's argv. The gateway runs as its own process group, recorded in the run as one
more process named "gateway", so `sm121 stop RUN` and `sm121 status` treat it like the
engine's own processes.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from sm121.engines.api_key import api_key
from sm121.errors import Sm121Error
from sm121.gateway import registry as upstreams_file
from sm121.gateway.config import GatewayConfig, UpstreamSpec
from sm121.gateway.entry import write_config
from sm121.hosts import processes
from sm121.hosts.python import python_module
from sm121.launch.readiness import NotReady, api_answers, port_in_use
from sm121.plan.model import ServePlan
from sm121.progress import Progress, quiet
from sm121.runs.state import GATEWAY_NODE, NodeProcess, RunInfo, update_run
from sm121.serving.run_upstreams import (
    DEFAULT_INFLIGHT,
    recipe_facts,
    spec_from_plan,
    with_pool,
)

NAME = GATEWAY_NODE
LOG_NAME = "gateway.log"
CONFIG_NAME = "gateway.json"
_READY_TIMEOUT_S = 60.0


def start_in_front(run: RunInfo, plan: ServePlan, port: int, progress: Progress = quiet) -> str:
    """The gateway in front of this run, following an upstreams file in the run's folder
    (this engine's spec, from its plan: policy and max-num-seqs as served, --set included),
    so later runs can join it (`serve --gateway-join RUN`). Returns the gateway's URL."""
    path = run.directory / upstreams_file.FILE_NAME
    upstreams_file.create(path, f"http://127.0.0.1:{port}",
                          [spec_from_plan(plan, run.run_id, run.base_url, run=run)])
    return start_gateway(run, plan.recipe, plan.profile, port, progress=progress, registry=path)


def start_gateway(run: RunInfo, recipe: str, profile: str | None, port: int,
                  progress: Progress = quiet,
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
    config_file = run.directory / CONFIG_NAME
    write_config(gateway_config(run, recipe, profile, port, max_inflight, registry), config_file)
    log = run.directory / LOG_NAME
    process = processes.spawn(python_module("sm121.gateway", str(config_file)), os.environ, log)
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


def gateway_config(run: RunInfo, recipe: str, profile: str | None, port: int,
                   max_inflight: int | None = None, registry: Path | None = None
                   ) -> GatewayConfig:
    """What `sm121 gateway --listen 127.0.0.1:PORT` would build: with `registry`, the
    upstreams that file lists; else this run's engine with the recipe's policy, capped at
    max_inflight (default: the recipe's max-num-seqs). The API keys come from the gateway's
    environment when it starts, never from this value's file."""
    if registry is not None:
        return GatewayConfig(registry=registry, port=port)
    policy, recipe_seqs = recipe_facts(recipe, profile)
    inflight = max_inflight or recipe_seqs or DEFAULT_INFLIGHT
    spec = with_pool(UpstreamSpec(url=run.base_url, policy=policy, max_inflight=inflight), run)
    return GatewayConfig(upstreams=(spec,), port=port, policy=policy, max_inflight=inflight)


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

