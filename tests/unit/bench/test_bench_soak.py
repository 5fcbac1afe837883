"""Soak pieces without an engine: durations, interval summaries, the resumable JSONL file
and its report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sm121.bench.scenarios.soak.interval import Interval
from sm121.bench.scenarios.soak.records import SoakInterval
from sm121.bench.scenarios.soak.runner import SoakFile, SoakRequest
from sm121.bench.scenarios.soak.workload import TurnOutcome
from sm121.bench.timeline import load_jsonl, read_timeline, soak_panels, timeline_section
from sm121.errors import Sm121Error


def test_goodput_counts_only_turns_within_the_slo() -> None:
    interval = Interval(slo_s=2.0)
    interval.add(TurnOutcome(True, completion_tokens=40, latency_s=1.0))
    interval.add(TurnOutcome(True, completion_tokens=40, latency_s=5.0))  # too slow
    interval.add(TurnOutcome(False, latency_s=0.1, error="HTTP 503"))
    row = interval.summary(seconds=10.0)
    assert row.goodput_tok_s == 4.0 and row.completion_tokens == 80
    assert row.requests_ok == 2 and row.requests_good == 1 and row.errors == 1
    assert row.error_samples == ["HTTP 503"]


def _request(out: Path, resume: bool = False) -> SoakRequest:
    return SoakRequest("http://127.0.0.1:1", "tiny", "coding-agent", 2, 600, 60, out,
                       resume=resume)


def test_soak_file_refuses_to_overwrite_and_resumes(tmp_path: Path) -> None:
    out = tmp_path / "soak.jsonl"
    file = SoakFile(_request(out))
    file.write(SoakInterval(kind="soak", elapsed_s=120.0, time="2026-01-01T00:02:00+00:00",
                            interval_s=60.0, requests_ok=3, errors=0, completion_tokens=90,
                            goodput_tok_s=5.0, engine_restarts=1))
    file.close()
    with open(out, "a") as handle:
        handle.write('{"kind": "soak", "elapsed_s": 1')  # a torn last line
    with pytest.raises(Sm121Error, match="already exists"):
        SoakFile(_request(out))
    again = SoakFile(_request(out, resume=True))
    assert again.done_s == 120.0 and again.restarts == 1
    again.close()
    rows = load_jsonl(out)
    assert [r["kind"] for r in rows] == ["soak-start", "soak", "event"]
    assert rows[-1]["what"] == "resumed" and rows[-1]["params"]["resume"] is True
    assert rows[0]["params"] == {"url": "http://127.0.0.1:1", "model": "tiny",
                                 "workload": "coding-agent", "agents": 2, "duration_s": 600,
                                 "report_every_s": 60, "resume": False, "max_tokens": None,
                                 "slo_s": 60.0, "metrics_url": None}
    assert rows[1] == {"kind": "soak", "time": "2026-01-01T00:02:00+00:00", "elapsed_s": 120.0,
                       "interval_s": 60.0, "requests_ok": 3, "errors": 0,
                       "completion_tokens": 90, "goodput_tok_s": 5.0, "engine_restarts": 1}


def test_soak_report_plots_goodput_with_the_restart(tmp_path: Path) -> None:
    out = tmp_path / "s.jsonl"
    rows = [{"kind": "soak-start", "time": "t", "params": {}}]
    rows += [{"kind": "soak", "elapsed_s": 60.0 * i, "goodput_tok_s": 10.0 - (i == 3) * 8,
              "requests_ok": 5, "errors": int(i == 3), "mem_available_gib": 10.0,
              "mem_free_gib": 4.0, "kv_usage_pct": 0.1, "engine_rss_gib": 1.5}
             for i in range(1, 6)]
    rows.insert(4, {"kind": "event", "what": "engine restarted", "elapsed_s": 170.0})
    out.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    assert len(soak_panels(read_timeline(out))["goodput tokens/s"]["goodput"]) == 5
    lines = timeline_section(out, tmp_path)
    assert "- engine restarted at 170 s" in lines
    assert (tmp_path / "s-timeline.png").stat().st_size > 1000
