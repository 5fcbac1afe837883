"""benchmarks/cold_start.py runs on the committed results files and still prints what
docs/results/cold-start.txt holds (docs/capacity.md's "The cold start" table comes from it)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_the_cold_start_benchmark_prints_the_committed_validation():
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "cold_start.py")],
                          capture_output=True, text=True, check=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    committed = [line for line in (ROOT / "docs/results/cold-start.txt").read_text().splitlines()
                 if not line.startswith("# ")]
    assert done.stdout.splitlines() == committed
    # the H200's chunk-2048 arms at 28 agents: 10 of 10 misses in the cold start, modelled 9.7
    assert any(line.startswith("H200 agent-admission ") and " 28 coding-agent-with-batch " in line
               and "|                   10   9.7  -0.3 |" in line for line in committed)
