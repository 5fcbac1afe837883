"""`sm121 bench report` turns results files into Markdown with PNG plots."""

from typing import Any

from support import invoke_cli
from test_bench_overlap_metrics import ONGOING, _sample, metrics_of

from sm121.bench.report.compare import compare_with
from sm121.bench.report.markdown import render_report
from sm121.bench.result_models import AbEntry, Open
from sm121.bench.results import ResultsFile
from sm121.bench.scenarios import get


def _ab_file(path):
    results = ResultsFile(path, "ab", "overlap", {"recipe": "r", "profiles": ["agent", "lpt"],
                                                "reps": 2})
    for rep, profile, first_token in [(0, "agent", 12.0), (0, "lpt", 12.5), (1, "lpt", 12.4),
                                      (1, "agent", 12.1)]:
        short = {"submitted": 7.0, "first_token": first_token if profile == "agent" else 7.2}
        sample = _sample(ONGOING, [short])
        sample["metrics"] = metrics_of(sample)
        results.add_sample({"profile": profile, "rep": rep, "samples": [sample],
                            "engine_args": {"max-num-batched-tokens": 2048},
                            "metrics": sample["metrics"], "probe": {"safe": True}})
    entries = [AbEntry[Any, Open].model_validate(s) for s in results.data["samples"]]
    results.set(summary=compare_with(get("overlap"), entries, ["agent", "lpt"]).to_json())
    results.finish("complete")
    return path


def test_report_has_the_comparison_table_and_the_plots(tmp_path):
    out = tmp_path / "report"
    report = render_report([_ab_file(tmp_path / "ab.json")], out, "test")
    text = report.read_text()
    assert "| metric | agent | lpt | lpt/agent |" in text
    assert "admission ratio" in text and "engine window" in text
    for plot in ("ab-decode-timeline.png", "ab-gaps.png", "ab-admission.png"):
        assert (out / plot).stat().st_size > 1000
        assert f"({plot})" in text


def test_the_cli_writes_the_report(tmp_path):
    path = _ab_file(tmp_path / "ab.json")
    result = invoke_cli("bench", "report", str(path), "--out", str(tmp_path / "r"))
    assert "report:" in result.stdout
    assert (tmp_path / "r" / "report.md").is_file()


def test_bench_commands_are_registered():
    out = invoke_cli("bench", "--help").stdout
    for command in ("probe", "overlap", "decode-scaling", "prefill-scaling", "locality",
                    "retrieval", "ab", "report"):
        assert command in out
