"""What a turn reused, read one way by the summary, the report and the verdict (reused.py, on
bench/cached.py's rule):
vLLM leaves usage.prompt_tokens_details out of a reply whose prompt found nothing cached, so
the turns whose whole prefix was evicted record no count. In a run whose other turns have
one they reused 0, and the summary's reuse counts them so; in a run where no turn has one
(vLLM without --enable-prompt-tokens-details; llama-server sends one on every reply) reuse is
not measured, never 0.
The results file keeps what the server sent."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from sm121.bench.cached import counted_cached
from sm121.bench.report.markdown import render_report
from sm121.bench.results import ResultsFile
from sm121.bench.scenarios.agents.capacity import evidence
from sm121.bench.scenarios.agents.models import read_run
from sm121.bench.scenarios.agents.reused import reports_cached, turn_reused
from sm121.bench.scenarios.agents.summary import headline, summarize_run
from sm121.bench.scenarios.trace.models import TraceSample
from sm121.bench.scenarios.trace.run import usage_hits

PROMPT = [1000, 2000, 3000]  # each turn's prompt; a turn reuses its previous prompt


def _turn(agent: int, turn: int, cached: int | None) -> dict:
    start = 10.0 * turn + agent
    prompt = PROMPT[turn]
    return {"kind": "turn", "agent": agent, "conversation": 0, "turn": turn,
            "submitted": start, "first_token": start + 0.5, "finished": start + 1.0,
            "ttft_s": 0.5, "decode_tok_s": 30.0, "prompt_tokens": prompt,
            "cached_tokens": cached,
            "reuse": None if cached is None else cached / prompt,
            "usage_checked": True, "prompt_exact": True}


def _evicted_run() -> list[dict]:
    """Two agents, three turns. Every first turn found nothing cached and, as vLLM sends it,
    says no count; agent 1's third turn lost its whole prefix and says none either."""
    samples: list[dict] = [{"kind": "config", "slo": "ttft_p95=2s", "agents": 2,
                            "tools_mode": "api",
                            "workload": {"name": "coding-agent", "slo_from_turn": 1}}]
    for agent in range(2):
        samples += [_turn(agent, 0, None), _turn(agent, 1, 1000),
                    _turn(agent, 2, None if agent == 1 else 2000)]
    return samples


def _silent_run() -> list[dict]:
    """The same run from an engine that reports no cached count at all."""
    return [{**s, "cached_tokens": None, "reuse": None} if s["kind"] == "turn" else s
            for s in _evicted_run()]


def test_a_turn_with_no_count_in_a_run_that_counts_reused_nothing():
    run = read_run(_evicted_run())
    assert reports_cached(run.turns)
    evicted = next(t for t in run.turns if (t.agent, t.turn) == (1, 2))
    assert turn_reused(evicted, reported=True) == 0.0
    assert turn_reused(evicted, reported=False) is None
    assert counted_cached(None, 3000, True) == 0 and counted_cached(None, None, True) is None
    assert counted_cached(None, 3000, False) is None and counted_cached(7, 3000, False) == 7
    assert evicted.cached_tokens is None and evicted.reuse is None  # the record as sent


def test_the_summary_counts_the_evicted_turns_at_zero():
    summary = summarize_run(read_run(_evicted_run()))
    first, second, third = summary.by_turn
    assert (first.reuse_mean, first.reuse_min) == (0.0, 0.0)  # the first prompts
    assert second.reuse_mean == pytest.approx(0.5)
    # agent 0 reused 2000/3000, agent 1 nothing: the mean is not agent 0's alone
    assert third.reuse_mean == pytest.approx(1 / 3) and third.reuse_min == 0.0
    assert summary.reuse_after_first.mean == pytest.approx((0.5 + 0.5 + 2 / 3 + 0) / 4)
    assert summary.reuse_after_first.min == 0.0
    assert headline(read_run(_evicted_run())).reuse_after_first == pytest.approx(
        summary.reuse_after_first.mean)


def test_the_summary_and_the_verdict_read_the_same_reuse():
    run = read_run(_evicted_run())
    summary = summarize_run(run)
    found = evidence(run, summary, None, None, 2.0, block_size=16)
    assert found.reuse_mean == pytest.approx(summary.reuse_after_first.mean)
    assert found.reuse_min == summary.reuse_after_first.min == 0.0


def test_a_run_with_no_count_at_all_has_no_reuse_measured():
    run = read_run(_silent_run())
    summary = summarize_run(run)
    assert summary.reuse_after_first.mean is None and summary.reuse_after_first.min is None
    assert all(r.reuse_mean is None and r.reuse_min is None for r in summary.by_turn)
    assert headline(run).reuse_after_first is None


def _written(tmp_path: Path, name: str, samples: list[dict], stored: dict) -> Path:
    results = ResultsFile(tmp_path / f"{name}.json", "scenario", "agents", {})
    results.set(samples=samples, summary=stored)
    results.finish("complete")
    return results.path


def _rows(text: str) -> dict[str, list[str]]:
    """The by-turn table's rows by turn number: reuse mean and min."""
    found = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 8 and cells[0].isdigit():
            found[cells[0]] = cells[5:7]
    return found


def test_bench_report_recomputes_the_reuse_from_the_turns(tmp_path: Path):
    """A file written before the rule: its stored summary skipped the evicted turn (reuse
    after turn 1 at 55.6%, turn 3 at 66.7%). The report reads the turns again; the file is left
    as it was."""
    samples = _evicted_run()
    old = summarize_run(read_run(samples)).to_json()
    old["reuse_after_first"] = {"mean": 0.5556, "min": 0.5}
    path = _written(tmp_path, "evicted", samples, old)
    before = path.read_bytes()
    text = render_report([path], tmp_path / "report", "r", draw=False).read_text()
    rows = _rows(text)
    assert rows["1"] == ["0.0%", "0.0%"] and rows["3"] == ["33.3%", "0.0%"]
    assert path.read_bytes() == before
    stored = json.loads(gzip.decompress(before) if before[:2] == b"\x1f\x8b" else before)
    evicted = [s for s in stored["samples"] if s.get("agent") == 1 and s.get("turn") == 2]
    assert evicted[0]["cached_tokens"] is None and evicted[0]["reuse"] is None

    silent = _written(tmp_path, "silent", _silent_run(), {})
    rows = _rows(render_report([silent], tmp_path / "silent", "r", draw=False).read_text())
    assert set(rows) == {"1", "2", "3"}
    assert all(cells == ["-", "-"] for cells in rows.values())


def test_an_ab_reports_the_recomputed_reuse_of_each_run(tmp_path: Path):
    """An A/B's headline table reads each entry's metrics recomputed from its turns, not the
    metrics it stored."""
    entries = [{"profile": profile, "rep": 0, "samples": samples,
                "metrics": {"reuse_after_first": 0.5556}, "summary": {}}
               for profile, samples in (("a", _evicted_run()), ("b", _silent_run()))]
    results = ResultsFile(tmp_path / "ab.json", "ab", "agents",
                          {"recipe": "r", "profiles": ["a", "b"], "reps": 1})
    results.set(samples=entries, summary={})
    results.finish("complete")
    text = render_report([results.path], tmp_path / "report", "r", draw=False).read_text()
    row = next(line for line in text.splitlines() if "prefix reuse after turn 1" in line)
    assert "41.7% n=1" in row and "55.6%" not in row  # (0.5 + 0.5 + 2/3 + 0) / 4
    assert row.split("|")[3].strip() == "-"  # b: no count, not measured


def test_a_trace_counts_a_request_with_no_count_as_cached_nothing():
    def request(cached: int | None) -> TraceSample:
        return TraceSample(request=0, scheduled=0.0, submitted=0.0, lag_s=0.0, output_asked=8,
                           blocks=2, implied_cached=0, prompt_tokens=1024,
                           cached_tokens=cached)

    assert usage_hits([request(None), request(512)]) == 512
    assert usage_hits([request(None), request(None)]) is None
