"""The agents report from raw results: tables, the goodput line, plots, the A/B verdict
recomputed from the raw turns, the knee of a sweep, and the timestamp-first ratio."""

from __future__ import annotations

import json

from sm121.bench.report.markdown import render_report
from sm121.bench.results import ResultsFile


def _samples(workload: str, ttft_later: float, background: bool = False) -> list[dict]:
    samples: list[dict] = [{"kind": "config", "slo": "ttft_p95=2s", "agents": 2,
                            "tools_mode": "api", "workload": {"name": workload,
                                                             "slo_from_turn": 1}}]
    for agent in range(2):
        for turn in range(3):
            start = 10.0 * turn + agent
            ttft = 5.0 if turn == 0 else ttft_later
            samples.append({"kind": "turn", "agent": agent, "conversation": 0, "turn": turn,
                            "submitted": start, "first_token": start + ttft,
                            "finished": start + ttft + 1, "ttft_s": ttft, "decode_tok_s": 30.0,
                            "prompt_tokens": 1000 + 100 * turn,
                            "cached_tokens": 0 if turn == 0 else 950, "reuse": 0 if turn == 0
                            else 0.95, "usage_checked": True, "prompt_exact": True,
                            "client_cpu_share": 0.05, "client_cpu_s": 0.01})
    if background:
        samples.append({"kind": "background", "agent": -1, "turn": 0, "submitted": 9.0,
                        "first_token": 25.0, "finished": 25.5, "ttft_s": 16.0,
                        "prompt_tokens": 40000})
    return samples


def _scenario(tmp_path, name: str, workload: str, ttft_later: float):
    results = ResultsFile(tmp_path / f"{name}.json", "scenario", "agents", {})
    results.set(samples=_samples(workload, ttft_later), summary={})
    results.finish("complete")
    return results.path


def test_an_agents_report_has_its_tables_plots_and_the_timestamp_ratio(tmp_path):
    clean = _scenario(tmp_path, "clean", "coding-agent", 0.5)
    stamped = _scenario(tmp_path, "stamped", "timestamp-first", 5.0)
    report = render_report([clean, stamped], tmp_path / "report", "agents")
    text = report.read_text()
    assert "Goodput **100.0%** (4/4 turns" in text and "Goodput **0.0%**" in text
    assert "Usage cross-check held on 6/6 turns" in text
    assert "| 2 | 2 | 0.5 s" in text  # turn 2: TTFT p50 of two agents
    assert "timestamp-first vs coding-agent" in text and "| 2 | 0.5 s | 5 s | 10.0x |" in text
    for stem in ("clean", "stamped"):
        for plot in ("timeline", "ttft-cdf", "reuse"):
            assert (tmp_path / "report" / f"{stem}-{plot}.png").stat().st_size > 0


def test_an_ab_report_recomputes_the_verdict_from_raw_turns(tmp_path):
    path = tmp_path / "ab.json"
    params = {"recipe": "r", "profiles": ["agent", "agent-admission"], "reps": 2}
    results = ResultsFile(path, "ab", "agents", params)
    for rep in range(2):
        for profile, later in (("agent", 8.0), ("agent-admission", 0.5)):
            results.add_sample({"profile": profile, "rep": rep, "engine_args": {},
                                "samples": _samples("coding-agent-with-batch", later, True),
                                "metrics": {}})  # stale metrics: the report recomputes
    results.finish("complete")
    text = render_report([path], tmp_path / "report", "ab").read_text()
    assert "Best profile by goodput: agent-admission" in text
    assert "agent: goodput 0.0%" in text
    assert (tmp_path / "report" / "ab-timeline.png").stat().st_size > 0
    assert json.loads(path.read_text())["kind"] == "ab"
    lenient = render_report([path], tmp_path / "lenient", "ab", slo="ttft_p95=10s").read_text()
    assert "agent: goodput 100.0%, ttft_p95=10s observed 8" in lenient  # re-judged, same turns


def test_a_sweep_report_draws_the_knee(tmp_path):
    path = tmp_path / "sweep.json"
    results = ResultsFile(path, "sweep", "agents", {"agents": [1, 2]})
    for n, later in ((1, 0.5), (2, 4.0)):
        results.add_sample({"agents": n, "samples": _samples("coding-agent", later),
                            "metrics": {}})
    results.set(summary={"slo": "ttft_p95=2s", "largest_n": 1})
    results.finish("complete")
    text = render_report([path], tmp_path / "report", "sweep").read_text()
    assert "Largest N meeting `ttft_p95=2s`: **1**" in text
    assert "| 1 | 100.0% | yes |" in text and "| 2 | 0.0% | no |" in text
    assert (tmp_path / "report" / "sweep-knee.png").stat().st_size > 0
