"""The capacity model against the cliff it predicts, on the real tiny engine (issue 44): the
engine's KV pool made small on purpose, two workloads whose sessions end near 9K and 15K
tokens, `sm121 bench agents` at the prediction and one agent on either side (more past it while
the runs still meet the SLO, to at most three past it).

What is asserted is what the pool decides on any machine: up to the predicted N no run evicts
(each judged turn reuses what it would when nothing is evicted: its previous prompt's blocks)
and none gets a KV verdict; from one agent past it every run evicts (a turn reuses a quarter of
its prompt less than that, or more), and every miss there is named KV. Where the goodput falls below 95% within the runs, it
falls at the predicted cliff or within two agents of it. How many evicting agents the SLO
survives is what a re-prefill costs against it, and on this shared machine that moves with the
load (docs/results/cpu-testbed/capacity: +9.1% and 0% at load 12-20, +18.2% and +14.3% at load
5-7; on an idle machine the 9K sessions held the 2 s SLO at 13 agents with 9% reuse). Timings
are not asserted.

It runs benchmarks/capacity_cliff.py, the command of the committed run, on its own engine:
3-5 minutes here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support import free_port

pytestmark = [pytest.mark.integration, pytest.mark.own_engines]

ROOT = Path(__file__).resolve().parents[2]


def test_the_measured_cliff_lies_where_the_pool_predicts(sm121_home, tmp_path):
    out = tmp_path / "capacity"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "capacity_cliff.py"),
                           "--out", str(out), "--port", str(free_port())],
                          capture_output=True, text=True, timeout=1800, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    found = json.loads((out / "capacity.json").read_text())["workloads"]
    for w in found:  # the working set starts at the first prompt as this engine renders it
        assert w["first_prompt_tokens"] > 8_000 and 0 < w["turn_template_tokens"] < 64, w
        assert "/tokenize renders it" in w["prediction"], w["prediction"]
    assert [w["working_set_tokens"] for w in found] == sorted(
        w["working_set_tokens"] for w in found)  # two session lengths, shortest first
    assert found[0]["holds"] > found[1]["holds"]  # longer sessions: fewer agents
    for w in found:
        assert w["binding"] == "KV", w["prediction"]
        for r in w["runs"]:
            # memory/verdict.py's one-turn rule: a turn 25 points under its own expectation
            # (its previous prompt in whole blocks) lost part of its prefix
            evicted = r["worst_turn_expected"] - r["worst_turn_reuse"] > 0.25
            if r["agents"] <= w["holds"]:
                assert r["resource"] != "KV", r["verdict"]  # no KV verdict up to the N
                assert not evicted, r  # and no evictions
            else:
                assert evicted, r  # evictions from one agent past it
                if not r["met"]:
                    assert r["resource"] == "KV", r["verdict"]  # a KV verdict past it
        assert any(r["agents"] == w["predicted_cliff"] for r in w["runs"])  # onset tested
        low, cliff = w["bracket"]
        if cliff is not None:  # the SLO fell within the runs
            assert low is not None and cliff - low <= 2
            assert w["predicted_cliff"] <= cliff <= w["predicted_cliff"] + 2, w
