"""benchmarks/long_job_window.py runs on the committed results files and still prints what
docs/results/long-job-window.txt holds (docs/capacity.md's "The long job's window" table comes
from it), its evicted turns read by the verdict's own rule."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_the_long_job_window_benchmark_prints_the_committed_validation():
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "long_job_window.py"),
                           "--turns"], capture_output=True, text=True, check=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    committed = [line for line in
                 (ROOT / "docs/results/long-job-window.txt").read_text().splitlines()
                 if not line.startswith("# ")]
    assert done.stdout.splitlines() == committed
    # a turn that re-prefilled its whole context records no cached count (vLLM leaves it out
    # where nothing was cached): the verdict's rule reads it as evicted, at 0% reuse
    assert any("reused   0% (its own  97%), re-prefilled 19,097 of 19,097" in line
               for line in committed)
    # the held-out H100 baseline at 19 agents: 10 evicted turns, 9 of them over the SLO
    assert any(line.startswith("H100 baseline ") and " 19 " in line
               and "   10                    9    8.2 " in line for line in committed)
