"""Helpers shared by the test suites."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from click.testing import CliRunner

from sm121.free_ports import free_port

__all__ = ["free_port"]  # re-exported: every test takes its ports from here

SM121 = [sys.executable, "-m", "sm121.cli.main"]


def run_cli(*args: str, check: bool = True, timeout: float = 900,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run the real `sm121` command line in a subprocess."""
    result = subprocess.run([*SM121, *args], capture_output=True, text=True, timeout=timeout,
                            env={**os.environ, **(env or {})})
    if check and result.returncode != 0:
        raise AssertionError(f"sm121 {' '.join(args)} failed ({result.returncode}):\n"
                             f"{result.stdout}\n{result.stderr}")
    return result


def invoke_cli(*args: str, check: bool = True, env: dict[str, str] | None = None
               ) -> subprocess.CompletedProcess[str]:
    """Run the `sm121` command line in this process (typer's app under click's CliRunner),
    with the real entry point's error handling; the result has run_cli's shape.

    Far cheaper than run_cli (a new Python process imports sm121 and typer: 0.3-1.5 s here,
    seconds on a loaded host), so a test uses it unless the process itself is what it tests
    (signals, process groups, what a shell sees). What a command may change in this process
    is put back afterwards: the environment (`--debug` sets SM121_DEBUG), the working
    directory and the root logger's handlers (`gateway` calls logging.basicConfig)."""
    from sm121.cli.main import main

    environ, cwd = dict(os.environ), os.getcwd()
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    code: int = 0
    try:
        with CliRunner().isolation(env=env) as (stdout, stderr, _):
            try:
                main(list(args))
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            sys.stdout.flush()
            sys.stderr.flush()
            out, err = stdout.getvalue().decode(), stderr.getvalue().decode()
    finally:
        os.environ.clear()
        os.environ.update(environ)
        os.chdir(cwd)
        root.handlers[:], root.level = handlers, level
    result = subprocess.CompletedProcess(["sm121", *args], code, out, err)
    if check and code != 0:
        raise AssertionError(f"sm121 {' '.join(args)} failed ({code}):\n{out}\n{err}")
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


@dataclass(frozen=True)
class FailedBoot:
    """A serve whose engine booted and was then refused (by readiness) and stopped."""

    result: subprocess.CompletedProcess[str]
    run_dir: Path
