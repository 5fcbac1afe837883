"""`sm121 bench soak` with its default workload, bench agents' coding-agent sessions, on the
real tiny engine: every interval reaches the file, turns succeed with the tools in the
request, and the sessions reuse the prefix cache after their first turn. A short soak (30 s,
three intervals); the 30-minute soak with an engine kill is docs/results/cpu-testbed/soak/.
Why 30 s: a coding-agent session's first turn prefills its whole system prompt and tools, and
with the box loaded (a fresh-clone `make test` beside other work, load average about 9 on 2
cores) 15 s ended with 0 turns done and 0 errors, a slow box rather than a fault."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support import TinyEngine, run_cli

pytestmark = pytest.mark.integration


def test_a_short_coding_agent_soak(tiny_engine: TinyEngine, tmp_path: Path) -> None:
    out = tmp_path / "soak.jsonl"
    result = run_cli("bench", "soak", "--url", tiny_engine.base_url, "--agents", "2",
                     "--duration", "30s", "--report-every", "10s", "--max-tokens", "8",
                     "--out", str(out), "--json", timeout=600)
    summary = json.loads(result.stdout)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    intervals = [r for r in rows if r["kind"] == "soak"]
    assert rows[0]["kind"] == "soak-start" and rows[-1]["kind"] == "soak-end"
    assert rows[0]["params"]["workload"] == "coding-agent"
    assert "soak workload: coding-agent" in result.stderr
    assert len(intervals) == 3 and summary["status"] == "complete"
    assert summary["errors"] == 0 and summary["requests_ok"] >= 4
    # Turns 2+ of a session send its whole previous prompt again: most of it is cached. The
    # engine says its counts, so every interval with turns has its sum (none is "not reported")
    counted = [r for r in intervals if r["requests_ok"]]
    assert counted and all(r["cached_tokens"] is not None for r in counted)
    assert "prefix reuse" in result.stderr and "prefix reuse not reported" not in result.stderr
    cached = sum(r["cached_tokens"] for r in counted)
    prompt = sum(r["prompt_tokens"] for r in intervals)
    assert prompt > 0 and cached / prompt > 0.5, (cached, prompt)
