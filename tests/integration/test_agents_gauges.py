"""The engine's gauges during `sm121 bench agents` on the real tiny engine, booted with
max-num-seqs below the agents (`--set max-num-seqs=2`, 4 agents that are always busy: short
think times, a 20K-token context whose turns each add 100-200 tokens and get 16-32 back):
requests wait while two run, the run misses its SLO, and its verdict names sequences (the
gauges' peaks against the max-num-seqs of the run's own plan, found by the URL's port); the
peaks and the series are in the results file, the console summary and the report. Its own
boot: the session engine must keep its own max-num-seqs.

The workload is chosen so that most scrapes can see two running:
- not decode-heavy: with long replies the tiny engine's API server spent the run streaming
  and answered /metrics only in its idle gaps, where nothing ran or waited;
- not prefill-heavy: vLLM sets its gauges after each engine step, so a long prefill step
  shows the state before it (one running, the one just admitted not yet counted). With this
  test's first workload (1.5-2K-token appends, 4-8 back) 1-4 of 9-11 scrapes read two
  running, and a loaded CI run read none. This one read two running in 9-10 of 19-22 scrapes
  beside two busy loops (docs/results/cpu-testbed/capacity/gauges/README.md)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import TinyEngine, free_port, run_cli
from support.timeouts import BOOT_S, SERVE_S

pytestmark = [pytest.mark.integration, pytest.mark.own_engines]
MAX_NUM_SEQS = 2
WORKLOAD = """preset: coding-agent
system_prompt_tokens: 20000
tools: {count: 2, tokens_each: 40}
append_tokens: [100, 200]
output_tokens: [16, 32]
think_time_s: [0.05, 0.1]
"""


@pytest.fixture(scope="module")
def two_seqs(sm121_home: Path) -> Iterator[TinyEngine]:
    port = free_port()
    run_cli("serve", "tiny-cpu", "--profile", "agent", "--port", str(port),
            "--set", f"max-num-seqs={MAX_NUM_SEQS}", "--timeout", str(BOOT_S), timeout=SERVE_S)
    run_dir = max((sm121_home / "runs").glob("tiny-cpu-agent-*"),
                  key=lambda p: p.stat().st_mtime)
    engine = TinyEngine(base_url=f"http://127.0.0.1:{port}", model="tiny",
                        run_id=run_dir.name, port=port, run_dir=run_dir)
    try:
        yield engine
    finally:
        run_cli("stop", engine.run_id, check=False)


def test_a_run_bound_by_max_num_seqs_reads_sequences(two_seqs: TinyEngine, tmp_path: Path
                                                     ) -> None:
    workload = tmp_path / "busy-agents.yaml"
    workload.write_text(WORKLOAD)
    out = tmp_path / "agents.json"
    result = run_cli("bench", "agents", "--url", two_seqs.base_url, "--agents", "4",
                     "--turns", "4", "--gauges-every", "0.25", "--workload", str(workload),
                     "--slo", "ttft_p95=0.1s", "--out", str(out), timeout=900)
    data = json.loads(out.read_text())
    (gauges,) = [s for s in data["samples"] if s.get("kind") == "gauges"]
    assert gauges["scrapes"] >= 3
    assert gauges["running_peak"] == MAX_NUM_SEQS and gauges["waiting_peak"] >= 1
    assert 0 < gauges["kv_usage_peak"] < 1
    assert len(gauges["series"]) == gauges["scrapes"]  # a short run: every reading kept
    assert max(p[3] for p in gauges["series"]) == MAX_NUM_SEQS
    (verdict,) = [s for s in data["samples"] if s.get("kind") == "capacity"]
    assert verdict["resource"] == "sequences", verdict["line"]
    assert verdict["line"].startswith(
        f"missed: sequences ({gauges['waiting_peak']} waiting while max-num-seqs 2 ran)")
    assert verdict["max_num_seqs"] == MAX_NUM_SEQS  # from the run's plan, by the URL's port
    assert verdict["pool_source"] == "the engine's /metrics"  # vLLM 0.32 says its blocks
    assert data["summary"]["gauges"]["waiting_peak"] == gauges["waiting_peak"]
    assert data["summary"]["gauges"]["series"] == []  # the summary keeps the peaks only
    assert f"running peak {MAX_NUM_SEQS}" in result.stdout
    assert "verdict: missed: sequences" in result.stdout
    run_cli("bench", "report", str(out), "--out", str(tmp_path / "report"))
    text = (tmp_path / "report" / "report.md").read_text()
    assert "Engine gauges over the run: KV usage peak" in text
