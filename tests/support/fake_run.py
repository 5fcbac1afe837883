"""A run directory as `sm121 serve` leaves it, around an engine sm121 did not start: the plan
of a built-in recipe, an engine log copied from tests/fixtures (a real boot's), and a node
whose process group is a stand-in (`sleep`), so `sm121 status` sees the run alive. For tests
of what sm121 reads from its own runs (a boot log's KV pool) against a fake upstream (named
as such where it is used); stopped by its recorded identity."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sm121.hosts import processes
from sm121.plan.build import build_plan
from sm121.runs.state import NodeProcess, RunInfo, create_run_dir, save_launch

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
H200_LOG = FIXTURES / "startup" / "gpu-h200-warm" / "engine.log"  # GPU KV cache size: 782,032
H100_LOG = FIXTURES / "capacity" / "h100-kv-pool.log"  # GPU KV cache size: 392,032 tokens


@contextmanager
def fake_run(run_id: str, base_url: str, boot_log: Path, *sets: tuple[str, str | int],
             recipe: str = "tiny-cpu", profile: str = "agent") -> Iterator[RunInfo]:
    """A ready run of `recipe` (with `sets` as --set) serving `base_url`, whose engine log is
    a copy of `boot_log`; its stand-in process group is stopped at the end."""
    plan = build_plan(recipe, profile, None, dict(sets), argv_check=False)
    folder = create_run_dir(run_id)
    save_launch(folder, plan, {})
    log = folder / "engine.log"
    shutil.copyfile(boot_log, log)
    standin = processes.spawn(["sleep", "600"], dict(os.environ), folder / "standin.log")
    mark = processes.identity(standin.pid)
    run = RunInfo(run_id=run_id, recipe=recipe, profile=profile, created="2025-01-01T00:00:00Z",
                  base_url=base_url, model="fake", status="ready",
                  nodes=[NodeProcess(name="head", pid=standin.pid, pgid=standin.pid,
                                     log=str(log), pid_file=str(folder / "engine.pid"),
                                     boot_id=mark.boot_id, start_time=mark.start_time)])
    run.save()
    try:
        yield run
    finally:
        processes.stop_group(standin.pid, mark)
        standin.wait(timeout=10)
