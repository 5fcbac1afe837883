"""The results file is versioned, written after every sample (atomically), and marked when a
run is interrupted; the A/B order alternates; the comparison is medians, spread and ratios."""

import json
from typing import Any

import pytest

from sm121.bench.ab import AbRequest, pair_order
from sm121.bench.report.compare import compare_with
from sm121.bench.result_models import AbEntry, Open
from sm121.bench.results import SCHEMA, ResultsFile, load_results
from sm121.bench.scenarios import get
from sm121.errors import Sm121Error


def test_results_are_on_disk_after_every_sample(tmp_path):
    path = tmp_path / "r" / "overlap.json"
    results = ResultsFile(path, "scenario", "overlap", {"reps": 2})
    results.add_sample({"rep": 0})
    on_disk = json.loads(path.read_text())
    assert on_disk["schema"] == SCHEMA and on_disk["schema_version"] == 1
    assert on_disk["status"] == "running" and on_disk["samples"] == [{"rep": 0}]
    assert on_disk["sm121_version"] and on_disk["created"]
    results.finish("interrupted")
    assert load_results(path)["status"] == "interrupted"
    assert not list(path.parent.glob("*.tmp*"))


def test_foreign_or_newer_files_are_refused(tmp_path):
    other = tmp_path / "x.json"
    other.write_text(json.dumps({"hello": 1}))
    with pytest.raises(Sm121Error, match="not an sm121 bench results file"):
        load_results(other)
    other.write_text(json.dumps({"schema": SCHEMA, "schema_version": 99}))
    with pytest.raises(Sm121Error, match="upgrade"):
        load_results(other)


def _order(profiles, reps, per_boot, tmp_path):
    return pair_order(AbRequest("r", profiles, "overlap", reps, {}, tmp_path / "ab.json", 1,
                                reps_per_boot=per_boot))


def test_ab_order_alternates_between_repetitions(tmp_path):
    assert _order(["a", "b", "c"], 3, 1, tmp_path) == [
        (0, "a"), (0, "b"), (0, "c"), (1, "c"), (1, "b"), (1, "a"), (2, "a"), (2, "b"), (2, "c")]


def test_ab_order_keeps_the_repetitions_of_one_boot_together(tmp_path):
    assert _order(["a", "b"], 3, 2, tmp_path) == [
        (0, "a"), (1, "a"), (0, "b"), (1, "b"), (2, "b"), (2, "a")]


def test_comparison_has_medians_spread_and_ratios_to_the_first_profile():
    entries = [AbEntry[Any, Open](profile=p, rep=0, metrics=Open(admission_ratio=v))
               for p, v in [("a", 100.0), ("a", 300.0), ("a", 200.0), ("b", 10.0), ("b", 20.0)]]
    table = compare_with(get("overlap"), entries, ["a", "b"]).to_json()
    row = table["metrics"]["admission_ratio"]
    assert row["profiles"]["a"] == {"median": 200.0, "min": 100.0, "max": 300.0, "n": 3}
    assert row["ratio_to_baseline"]["b"] == pytest.approx(15.0 / 200.0)
    assert table["baseline"] == "a"


def test_a_gzipped_results_file_loads_the_same(tmp_path):
    import gzip

    path = tmp_path / "a.json"
    ResultsFile(path, "scenario", "probe", {}).finish("complete")
    packed = tmp_path / "a.json.gz"
    packed.write_bytes(gzip.compress(path.read_bytes()))
    assert load_results(packed) == load_results(path)


def test_a_failure_is_recorded_with_its_error(tmp_path):
    results = ResultsFile(tmp_path / "f.json", "scenario", "overlap", {})
    with pytest.raises(Sm121Error), results.recording():
        raise Sm121Error("the server went away")
    data = load_results(tmp_path / "f.json")
    assert data["status"] == "failed" and "went away" in data["error"]


def test_ctrl_c_leaves_an_interrupted_file(tmp_path):
    results = ResultsFile(tmp_path / "i.json", "scenario", "overlap", {})
    with pytest.raises(KeyboardInterrupt), results.recording():
        results.add_sample({"rep": 0})
        raise KeyboardInterrupt
    data = load_results(tmp_path / "i.json")
    assert data["status"] == "interrupted" and data["samples"] == [{"rep": 0}]


def test_ab_records_a_failed_boot_goes_on_and_resumes_only_what_is_missing(tmp_path,
                                                                            monkeypatch):
    from contextlib import contextmanager

    from sm121.bench import ab
    from sm121.bench.boot import Boot, BootRecord
    from sm121.bench.result_models import AbEntry, Open

    calls, boots = [], []

    @contextmanager
    def booted(recipe, profile, overrides, port, host, trust, say, cluster=None):
        boots.append(profile)
        if profile == "b" and boots.count("b") == 1:  # the first boot of b fails
            raise Sm121Error("the engine did not become ready")
        yield Boot(None, f"run-{len(boots)}", BootRecord(run_id=f"run-{len(boots)}"))  # type: ignore[arg-type]

    def measure(request, boot, profile, rep, say):
        calls.append((rep, profile))
        return AbEntry(profile=profile, rep=rep, metrics=Open(admission_ratio=1.0))

    monkeypatch.setattr(ab, "booted", booted)
    monkeypatch.setattr(ab, "measure_on_boot", measure)
    request = ab.AbRequest("tiny-cpu", ["a", "b"], "overlap", 2, {}, tmp_path / "ab.json", 1)
    first = ab.run_ab(request).data
    assert boots == ["a", "b", "b", "a"] and calls == [(0, "a"), (1, "b"), (1, "a")]
    assert first["status"] == "complete"
    assert [s.get("error") is not None for s in first["samples"]] == [False, True, False, False]
    assert [s["boot_index"] for s in first["samples"]] == [0, 0, 1, 1]
    calls.clear()
    ab.run_ab(ab.AbRequest(**{**request.__dict__, "resume": True}))
    assert calls == [(0, "b")]
    assert len(load_results(tmp_path / "ab.json")["samples"]) == 5


def _bomb(path, expanded: int) -> None:
    """A .gz of a few KB that expands to `expanded` bytes."""
    import gzip

    with gzip.open(path, "wb") as handle:
        for _ in range(expanded // (1 << 20)):
            handle.write(b" " * (1 << 20))


def test_bench_report_refuses_a_gz_that_expands_past_the_cap(tmp_path, monkeypatch):
    """Read through the real `bench report`: the .gz is streamed and refused at the cap,
    never decompressed whole into memory."""
    import tracemalloc

    from typer.testing import CliRunner

    from sm121.bench import results  # imported before memory is traced
    from sm121.bench.report import markdown as report_md
    from sm121.cli.main import app

    assert report_md.render_report

    monkeypatch.setattr(results, "MAX_RESULTS_BYTES", 4 << 20, raising=False)
    bomb = tmp_path / "bomb.json.gz"
    _bomb(bomb, 64 << 20)
    assert bomb.stat().st_size < 256 << 10
    tracemalloc.start()
    try:
        outcome = CliRunner().invoke(app, ["bench", "report", str(bomb), "--out",
                                           str(tmp_path / "out")])  # imports are done
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert outcome.exit_code != 0
    assert "larger than 4 MiB once decompressed" in str(outcome.exception)
    assert peak < 32 << 20, f"{peak / 2**20:.0f} MiB held for a 64 MiB bomb"
