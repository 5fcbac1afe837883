"""Helpers shared by the test suites."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

SM121 = [sys.executable, "-m", "sm121.cli.main"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def run_cli(*args: str, check: bool = True, timeout: float = 900,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run the real `sm121` command line in a subprocess."""
    result = subprocess.run([*SM121, *args], capture_output=True, text=True, timeout=timeout,
                            env={**os.environ, **(env or {})})
    if check and result.returncode != 0:
        raise AssertionError(f"sm121 {' '.join(args)} failed ({result.returncode}):\n"
                             f"{result.stdout}\n{result.stderr}")
    return result


@dataclass(frozen=True)
class TinyEngine:
    """A real vLLM server on CPU serving the tiny model, booted through `sm121 serve`."""

    base_url: str
    model: str
    run_id: str
    port: int
    run_dir: Path

    def run_info(self) -> dict:
        return json.loads((self.run_dir / "run.json").read_text())
