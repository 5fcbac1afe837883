"""Every committed results file under docs/results loads through its scenario's models and
renders, with this sm121, exactly the Markdown `sm121 bench report` gave before the bench
refactor (tests/fixtures/report-golden, written by the code of that time). Four were written
again (`sm121 bench report FILE --out DIR`, its report.md) when a turn with no cached count, in a
run whose other turns have one, came to read as cached 0 (reused.turn_reused): the H200
agents runs and agent-check's chat run, whose first turns' reuse reads 0.0% where it read "-".

Most files render without plots (drawing is most of the time); a few, one per kind of
section, render with them, so the image lines and the PNG names are checked too."""

from __future__ import annotations

from pathlib import Path

import pytest

from sm121.bench.report.markdown import render_report
from sm121.bench.scenarios import load_typed

ROOT = Path(__file__).resolve().parents[3]
RESULTS = ROOT / "docs" / "results"
GOLDEN = ROOT / "tests" / "fixtures" / "report-golden"
TITLE = "sm121 bench report"
DRAWN = {"cpu-testbed__ab-overlap", "cpu-testbed__agents__ab-agents",
         "cpu-testbed__agents__coding-agent", "cpu-testbed__decode-scaling",
         "gpu-h200__ab-overlap__agent-rep1"}


def _source(golden: Path) -> Path:
    base = RESULTS / golden.stem.replace("__", "/")
    for candidate in (base.with_name(base.name + ".json"),
                      base.with_name(base.name + ".json.gz")):
        if candidate.is_file():
            return candidate
    raise AssertionError(f"no results file for {golden.name}")


GOLDENS = sorted(GOLDEN.glob("*.md"))


def test_there_is_a_golden_per_committed_results_file() -> None:
    assert len(GOLDENS) >= 40
    assert {g.stem for g in GOLDENS} >= DRAWN


def _without_images(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if not line.startswith("!["))


@pytest.mark.parametrize("golden", GOLDENS, ids=lambda g: g.stem)
def test_report_is_unchanged(golden: Path, tmp_path: Path) -> None:
    source = _source(golden)
    load_typed(source)  # the file fits its scenario's models
    draw = golden.stem in DRAWN
    report = render_report([source], tmp_path, TITLE, draw=draw)
    expected = golden.read_text()
    if draw:
        assert report.read_text() == expected
        images = [line for line in expected.splitlines() if line.startswith("![")]
        assert images and all((tmp_path / i.split("(")[1].rstrip(")")).is_file()
                              for i in images)
    else:
        assert _without_images(report.read_text()) == _without_images(expected)


def test_a_tunes_ab_reports_the_arms_its_profiles_do_not_list(tmp_path: Path) -> None:
    """The one committed results file without a golden: the old code could not render it
    (KeyError on the arm `t-lpt-4096`, a tune variant that the A/B's `profiles` do not list),
    so there is no "before". Every arm is a profile of the report, plots included."""
    source = RESULTS / "cpu-testbed" / "tune" / "ab-agents.json.gz"
    report = render_report([source], tmp_path, TITLE).read_text()
    assert "t-lpt-4096" in report and (tmp_path / "ab-agents-ttft-cdf.png").is_file()
