"""Session fixtures: an isolated SM121_HOME, and one real tiny vLLM engine for the session.

The engine boots once (about a minute on a quiet CPU) through sm121's own launcher, `sm121 serve
tiny-cpu --profile agent`, and is stopped at the end; every test that only needs a running
engine uses it. A test or fixture that boots its own engine says why in its docstring.
How long boots may take is in support/timeouts.py; the session's own boot times are printed at
its end."""

from __future__ import annotations

import json
import os
import statistics
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import TinyEngine, free_port, run_cli
from support.timeouts import BOOT_S, SERVE_S

from sm121.hosts.processes import group_alive

# Every engine the suite boots locally inherits this environment (launch/local.py). vLLM's CPU
# backend binds its OpenMP thread by default (`auto`: core 0 on a 2-core box, core 1 kept for
# the frontend), so every engine of the three sessions of `make test` computed on core 0 while
# core 1 idled. Unbound, one thread each, the scheduler spreads them. Measured alone on a quiet
# 2-core box: `pytest tests/integration/test_bench_ab.py` 137 s -> 116 s, and the two-node
# `test_cluster_measure.py -k bench_ab` (the same two variables in its recipe's env, as ssh
# nodes get only the recipe's) 113 s -> 86 s. A test environment choice, not the recipe's:
# one engine on a user's machine keeps vLLM's own binding.
os.environ.setdefault("VLLM_CPU_OMP_THREADS_BIND", "nobind")
os.environ.setdefault("OMP_NUM_THREADS", "1")
# On CPU, vLLM runs the model in a third process (its multiproc executor: API server, engine
# core, worker), each importing torch and vLLM, because the worker must set OpenMP's binding
# before torch starts; with the binding above set already, the engine core can run it
# (`VLLM_ENABLE_V1_MULTIPROCESSING=0` lets the CPU platform keep the single-process executor;
# the API server and the engine core stay two processes). `sm121 startup --steps` of one
# tiny-cpu boot each, quiet box: 31.1 s to the first generation with the worker, 23.2 s
# without. Nodes reached over ssh get only their recipe's env, and a tensor-parallel plan
# needs its workers: the loopback cluster's recipes do not set it.
os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")

_HOMES: list[Path] = []


@pytest.fixture(scope="session", autouse=True)
def sm121_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    home = tmp_path_factory.mktemp("sm121-home")
    _HOMES.append(home)
    previous = os.environ.get("SM121_HOME")
    os.environ["SM121_HOME"] = str(home)
    yield home
    # A safety net: a test killed mid-serve (e.g. by a subprocess timeout) cannot stop the
    # engines it started; every run under this session's home is stopped here by its group.
    run_cli("stop", "--all", check=False)
    if previous is None:
        os.environ.pop("SM121_HOME", None)
    else:
        os.environ["SM121_HOME"] = previous


@pytest.fixture(scope="session")
def tiny_engine(sm121_home: Path) -> Iterator[TinyEngine]:
    port = free_port()
    run_cli("serve", "tiny-cpu", "--profile", "agent", "--port", str(port), "--timeout",
            str(BOOT_S), timeout=SERVE_S)
    runs = sorted((sm121_home / "runs").glob("tiny-cpu-agent-*/run.json"),
                  key=lambda p: p.stat().st_mtime)
    run_dir = runs[-1].parent
    engine = TinyEngine(base_url=f"http://127.0.0.1:{port}", model="tiny",
                        run_id=run_dir.name, port=port, run_dir=run_dir)
    yield engine
    # Stopping is part of what is tested: the whole process group must be gone.
    pgid = int((run_dir / "engine.pid").read_text())
    run_cli("stop", engine.run_id)
    assert not group_alive(pgid), f"processes of group {pgid} survived `sm121 stop`"


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The boots this session made (from sm121's startup history), the distribution that
    support/timeouts.py is set from."""
    history = [h for home in _HOMES if (home / "startup-history.jsonl").is_file()
               for h in map(json.loads, (home / "startup-history.jsonl").read_text().splitlines())
               # a real serve wrote the run's argv; unit tests record made-up boots
               if (home / "runs" / h["run_id"] / "argv.json").is_file()]
    times = sorted(h["first_generation_s"] for h in history if h.get("first_generation_s"))
    if history:
        spread = (f"first generation after {times[0]:.0f} s (fastest), "
                  f"{statistics.median(times):.0f} s (median), {times[-1]:.0f} s (slowest)"
                  if times else "none reached a first generation")
        terminalreporter.write_line(
            f"engine boots this session: {len(history)} ({len(history) - len(times)} without a "
            f"first generation: refused or stopped); {spread}; limit {BOOT_S} s "
            "(support/timeouts.py)")
