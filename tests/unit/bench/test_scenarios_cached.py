"""Every scenario reads a request's cached count by one rule (bench/cached.py): a request with
no count, in a run where another request says one, cached nothing (vLLM leaves the count out
where it is 0); in a run where none does (an engine that sends no count), the figure is not
measured, shown as such, never 0%. Per scenario: locality (stored per turn as sent, read by
its summary and report), knee (the salted prompts' check), soak (its interval lines) and
trace (the requests below their implied hits)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sm121.bench.cached import cached_share, counted_cached, counts_reported, summed_cached
from sm121.bench.report.markdown import render_report
from sm121.bench.results import ResultsFile
from sm121.bench.scenarios import find
from sm121.bench.scenarios.knee.analysis import summarize_knee
from sm121.bench.scenarios.knee.console import console as knee_console
from sm121.bench.scenarios.knee.models import KneeSample, KneeSummary, PrefillStep
from sm121.bench.scenarios.locality.models import LocalitySample
from sm121.bench.scenarios.locality.summary import console as locality_console
from sm121.bench.scenarios.locality.summary import summarize_locality
from sm121.bench.scenarios.soak.interval import Interval
from sm121.bench.scenarios.soak.records import SoakInterval
from sm121.bench.scenarios.soak.runner import SoakFile, SoakRequest, interval_line
from sm121.bench.scenarios.soak.turn import TurnOutcome
from sm121.bench.scenarios.soak.workload import ChatLoop
from sm121.bench.scenarios.trace.models import TraceSample
from sm121.bench.scenarios.trace.run import short_requests, usage_hits


def test_the_rule():
    assert counts_reported([None, 0]) and not counts_reported([None, None])
    assert counted_cached(None, 100, True) == 0 and counted_cached(None, 100, False) is None
    assert counted_cached(None, None, True) is None  # no prompt count: a request that failed
    assert counted_cached(40, 100, False) == 40
    assert cached_share(None, 100, True) == 0.0 and cached_share(None, 100, False) is None
    assert cached_share(25, 100, True) == 0.25 and cached_share(25, 0, True) is None
    assert summed_cached([(None, 100), (30, 100), (None, None)], True) == 30
    assert summed_cached([(None, 100)], False) is None and summed_cached([], True) == 0


# --- locality ------------------------------------------------------------------------------

def _locality(counts: dict[str, list[int | None]], stored_reuse: bool = False
              ) -> list[LocalitySample]:
    """Each placement's turns with these cached counts, prompts of 1000 tokens. `stored_reuse`:
    as a file written before the rule stored it, 0.0 where the turn said no count."""
    rows = []
    for placement, cached in counts.items():
        for turn, count in enumerate(cached):
            reuse = count / 1000 if count is not None else (0.0 if stored_reuse else None)
            rows.append(LocalitySample(placement=placement, turn=turn, ttft_s=0.1 * (turn + 1),
                                       prompt_tokens=1000, cached_tokens=count,
                                       reuse_usage=reuse, reuse_metrics=None))
    return rows


def _locality_file(tmp_path: Path, name: str, samples: list[LocalitySample]) -> str:
    results = ResultsFile(tmp_path / f"{name}.json", "scenario", "locality", {})
    results.set(samples=[s.to_json() for s in samples],
                summary=summarize_locality(samples).to_json())
    results.finish("complete")
    return render_report([results.path], tmp_path / name, "r", draw=False).read_text()


def _rows(report: str, placement: str) -> list[list[str]]:
    return [[c.strip() for c in line.strip("|").split("|")] for line in report.splitlines()
            if line.startswith(f"| {placement} |")]


def test_locality_turns_with_no_count_in_a_run_that_counts_reused_nothing(tmp_path):
    """vLLM on the field at the top: every turn found nothing cached and says no count; the
    clean run's turns say theirs. The top turns read 0, in the summary, console and report."""
    samples = _locality({"clean": [None, 900], "top": [None, None]})
    assert samples[-1].cached_tokens is None and samples[-1].reuse_usage is None  # as sent
    summary = summarize_locality(samples)
    top = summary.placements["top"]
    assert [t.cached_tokens for t in top] == [0, 0] and [t.reuse_usage for t in top] == [0, 0]
    assert [t.reuse_usage for t in summary.placements["clean"]] == [0.0, 0.9]
    lines = locality_console(summary)
    assert "reuse from usage 0.0%, 90.0%" in lines[0]
    assert "reuse from usage 0.0%, 0.0%" in lines[1]
    report = _locality_file(tmp_path, "counted", samples)
    assert [r[4:6] for r in _rows(report, "top")] == [["0", "0"], ["0", "0"]]
    assert "not reported" not in report


def test_locality_with_no_count_at_all_is_not_measured(tmp_path):
    samples = _locality({"clean": [None, None], "top": [None, None]})
    summary = summarize_locality(samples)
    assert all(t.cached_tokens is None and t.reuse_usage is None
               for turns in summary.placements.values() for t in turns)
    assert all("reuse from usage not reported" in line for line in locality_console(summary))
    report = _locality_file(tmp_path, "silent", samples)
    assert [r[4:6] for r in _rows(report, "clean")] == [["-", "-"], ["-", "-"]]
    assert "- reuse from usage: not reported" in report


def test_a_locality_file_from_before_the_rule_reads_by_it(tmp_path):
    """Older files stored reuse_usage 0.0 where the turn said no count: the report recomputes
    the summary from the counts, so an engine that sent none reads not measured, not 0%."""
    silent = _locality({"clean": [None, None]}, stored_reuse=True)
    assert silent[0].reuse_usage == 0.0
    report = _locality_file(tmp_path, "old-silent", silent)
    assert [r[5] for r in _rows(report, "clean")] == ["-", "-"]
    counted = _locality({"clean": [None, 900]}, stored_reuse=True)
    report = _locality_file(tmp_path, "old-counted", counted)
    assert [r[5] for r in _rows(report, "clean")] == ["0", "0.9"]


# --- knee ----------------------------------------------------------------------------------

def _knee(counts: list[int | None]) -> list[KneeSample]:
    """Prefill steps of 128 tokens (the first a warm-up) with these cached counts, as a file
    reads them back (the base model, extra keys kept)."""
    return [KneeSample.model_validate(PrefillStep(
        kind="prefill", step=128, rep=rep - 1, prompt_tokens=128, cached_tokens=count, engine_s=0.01,
        client_s=0.02, engine_tok_s=12800.0, client_tok_s=6400.0).to_json())
        for rep, count in enumerate(counts)]


@pytest.mark.parametrize(("counts", "checked", "says"), [
    ([None, None, None], None, "not checked (the engine reports no cached count)"),
    ([None, 0, None], 0, "the engine counted nothing cached (checked)"),
    ([None, 64, None], 64, "the engine counted 64 tokens cached (the salt did not hold)"),
])
def test_the_knee_checks_the_salt_only_where_the_engine_counts(counts, checked, says):
    """A salted prompt must find nothing cached: a missing count checks it only where another
    prompt of the run says its count (vLLM leaves out a 0); where none does, nothing is
    checked, never "0 cached"."""
    summary = summarize_knee(_knee(counts))
    assert summary.prefill_cached == checked
    stored = KneeSummary.model_validate(summary.to_json())  # as the CLI reads the file
    assert any(says in line for line in knee_console(stored))


def test_a_knee_file_from_before_the_check_says_nothing_of_it():
    summary = summarize_knee(_knee([0, 0])).to_json()
    del summary["prefill_cached"]
    lines = knee_console(KneeSummary.model_validate(summary))
    assert lines and not any("salted" in line for line in lines)


# --- soak ----------------------------------------------------------------------------------

def _soak_interval(counts: list[int | None], reported: bool = False) -> SoakInterval:
    interval = Interval(slo_s=60.0)
    for count in counts:
        interval.add(TurnOutcome(True, completion_tokens=8, prompt_tokens=1000,
                                 cached_tokens=count, latency_s=1.0))
    return SoakInterval(kind="soak", time="t", elapsed_s=30.0, interval_s=30.0,
                        **vars(interval.summary(30.0, reported)))


def test_a_soak_interval_counts_a_turn_with_no_count_at_zero_where_the_run_counts():
    row = _soak_interval([None, 900, 600])
    assert row.cached_tokens == 1500 and row.prompt_tokens == 3000
    assert interval_line(row).endswith("prefix reuse 50.0%")
    later = _soak_interval([None, None], reported=True)  # an earlier interval said counts
    assert later.cached_tokens == 0 and interval_line(later).endswith("prefix reuse 0.0%")


def test_a_soak_whose_engine_sends_no_count_is_not_measured():
    row = _soak_interval([None, None])
    assert row.cached_tokens is None
    assert interval_line(row).endswith("prefix reuse not reported")
    assert interval_line(_soak_interval([], reported=True)).endswith("prefix reuse -")


def test_a_resumed_soak_knows_its_engine_reported_counts(tmp_path):
    out = tmp_path / "soak.jsonl"
    request = SoakRequest("http://127.0.0.1:1", "tiny", "chat-loop", 1, 600, 60, out)
    first = SoakFile(request)
    assert not first.reported
    first.write(_soak_interval([None, 900]))
    first.close()
    again = SoakFile(SoakRequest("http://127.0.0.1:1", "tiny", "chat-loop", 1, 600, 60, out,
                                 resume=True))
    assert again.reported
    again.close()


class _Replies:
    """What ChatLoop.step reads of a client: its model and a chat reply's JSON."""

    model = "tiny"

    def __init__(self, usage: dict[str, Any]) -> None:
        self.usage = usage

    async def post_json(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        return {"choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"},
                             "finish_reason": "length"}], "usage": self.usage}


async def test_the_chat_loop_keeps_a_missing_count_missing():
    usage = {"prompt_tokens": 700, "completion_tokens": 8, "total_tokens": 708}
    outcome = await ChatLoop().step(_Replies(usage), 0)  # type: ignore[arg-type]
    assert outcome.ok and outcome.prompt_tokens == 700 and outcome.cached_tokens is None
    counted = {**usage, "prompt_tokens_details": {"cached_tokens": 640}}
    outcome = await ChatLoop().step(_Replies(counted), 0)  # type: ignore[arg-type]
    assert outcome.cached_tokens == 640


# --- trace ---------------------------------------------------------------------------------

def _trace(cached: int | None, prompt: int | None = 1024, implied: int = 512) -> TraceSample:
    return TraceSample(request=0, scheduled=0.0, submitted=0.0, lag_s=0.0, output_asked=8,
                       blocks=2, implied_cached=implied, prompt_tokens=prompt,
                       cached_tokens=cached)


def test_a_trace_counts_requests_below_their_implied_hits_by_the_rule():
    """A request with no count, where others say one, found none: below its implied hits; a
    request with no usage at all (it failed) is not counted; no count anywhere: not known."""
    run = [_trace(None), _trace(512), _trace(None, prompt=None), _trace(0, implied=0)]
    assert short_requests(run) == 1 and usage_hits(run) == 512
    silent = [_trace(None), _trace(None)]
    assert short_requests(silent) is None and usage_hits(silent) is None


def test_every_scenario_here_is_registered():
    assert all(find(name) is not None for name in ("locality", "knee", "trace"))
