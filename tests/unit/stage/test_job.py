"""A copy job never outlives sm121: closing its stdin (sm121 exits, is killed, or the ssh link
drops) stops the job's whole process group, pipelines included."""

from __future__ import annotations

import os
import time
from pathlib import Path

from sm121.hosts.transport import LocalTransport
from sm121.stage.job import Job


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is gone for our purpose
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split(") ")[-1][0] != "Z"


def test_a_job_returns_its_output_and_status() -> None:
    done = Job(LocalTransport(), "echo out; echo err >&2; exit 3").wait(timeout=30)
    assert (done.returncode, done.stdout, done.stderr) == (3, "out\n", "err\n")


def test_stopping_a_job_ends_its_whole_pipeline(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    job = Job(LocalTransport(), f"sleep 300 | sleep 301 & echo $! > {pids}; wait")
    deadline = time.monotonic() + 20
    while not (pids.exists() and pids.read_text().strip()):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    pid = int(pids.read_text())
    assert alive(pid)
    job.stop()
    deadline = time.monotonic() + 10
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(pid)
