"""`sm121 gateway` in its own process (its own process group), for tests that measure the
gateway alone: its RSS, its open files, its log."""

from __future__ import annotations

import os
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from sm121.hosts import processes
from support import SM121, free_port


@dataclass(frozen=True)
class GatewayProcess:
    url: str
    pid: int
    log: Path

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")


@contextmanager
def gateway_process(upstream: str, folder: Path, *args: str) -> Iterator[GatewayProcess]:
    with spawned_gateway(folder, "--upstream", upstream, *args) as gateway:
        yield gateway


@contextmanager
def spawned_gateway(folder: Path, *args: str, ready: str = "/metrics"
                    ) -> Iterator[GatewayProcess]:
    """`sm121 gateway ARGS --listen FREE_PORT`, once GET `ready` answers 200; stopped by its
    recorded identity at the end."""
    port, log = free_port(), folder / "gateway.log"
    process = processes.spawn([*SM121, "gateway", *args, "--listen", f"127.0.0.1:{port}"],
                              dict(os.environ), log)
    started = processes.identity(process.pid)
    gateway = GatewayProcess(f"http://127.0.0.1:{port}", process.pid, log)
    try:
        _wait_for(gateway, process, ready)
        yield gateway
    finally:
        processes.stop_group(process.pid, started)
        process.wait(timeout=10)


def _wait_for(gateway: GatewayProcess, process: subprocess.Popen[bytes], ready: str) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"the gateway exited:\n{gateway.log_text()}")
        try:
            with urllib.request.urlopen(f"{gateway.url}{ready}", timeout=5):
                return
        except OSError:
            time.sleep(0.3)
    raise AssertionError(f"the gateway did not answer:\n{gateway.log_text()}")
