"""benchmarks/committed_runs.py yields every committed agents run once, each with the pool and
knobs it ran under (the one reader that long_job_window.py, cold_start.py and
capacity_judge.py share)."""

from __future__ import annotations

import importlib.util
import sys
import tarfile
from collections import Counter
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[3]


def _module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("committed_runs",
                                                  ROOT / "benchmarks" / "committed_runs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("committed_runs", module)
    spec.loader.exec_module(module)
    return module


def test_every_committed_run_is_yielded_once_with_its_pool_and_knobs():
    runs = list(_module().all_runs())
    assert not [key for key, n in Counter((r.card, r.arm, r.name) for r in runs).items() if n > 1]
    h100 = sorted(p.name for p in (ROOT / "docs/results/gpu-h100/capacity").glob(
        "capacity-*/*-agents-*.json.gz"))
    assert sorted(r.name for r in runs if r.card == "H100") == h100
    with tarfile.open(ROOT / "docs/results/gpu-h200/tune-capacity/tune-results.tar.gz") as tar:
        members = sorted(m.name.split("/", 1)[1] for m in tar.getmembers()
                         if m.name.startswith(("tune/capacity/", "tune/ab-agents/"))
                         and m.name.endswith(".json"))
    tune = [r for r in runs if r.card == "H200" and r.pool is not None]
    assert sorted(r.name for r in tune) == members
    # the pool and knobs the sitting ran under: the H100's verdict records, verdicts.txt
    assert all(r.pool and r.knobs.step_budget and r.knobs.max_num_seqs for r in [
        *tune, *(r for r in runs if r.card == "H100")])
    admission = next(r for r in tune if r.name == "capacity/agent-admission-agents-40.json")
    assert (admission.pool.tokens, admission.knobs.step_budget,
            admission.knobs.long_prefill_threshold, admission.knobs.max_num_seqs) == (
        781040, 2048, 1024, 41)
    assert {r.card for r in runs} == {"H100", "H200", "CPU"}
