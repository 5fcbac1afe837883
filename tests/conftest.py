"""Session fixtures: an isolated SM121_HOME, and one real tiny vLLM engine for the session.

The engine boots once (about a minute on CPU) through sm121's own launcher, `sm121 serve
tiny-cpu --profile agent`, and is stopped at the end; the later suites reuse it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import TinyEngine, free_port, run_cli

from sm121.launch.processes import group_alive


@pytest.fixture(scope="session", autouse=True)
def sm121_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    home = tmp_path_factory.mktemp("sm121-home")
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
    # A shared 2-core host under load has taken 13 minutes to boot it: wait long, once.
    run_cli("serve", "tiny-cpu", "--profile", "agent", "--port", str(port), "--timeout", "1500",
            timeout=1600)
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
