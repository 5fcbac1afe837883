"""The overlap repetition's metrics from a synthetic raw sample: both windows, the same-stream
baseline, admission validity and the outlive check."""

import pytest

from sm121.bench.scenarios.overlap.metrics import overlap_metrics, summarize_reps
from sm121.bench.scenarios.overlap.models import OverlapMetrics, OverlapSample
from sm121.bench.scenarios.overlap.run import predict_prefill_s


def metrics_of(sample: dict) -> dict:
    """The metrics of a raw sample, as a results file holds them."""
    return overlap_metrics(OverlapSample.model_validate(sample)).to_json()


def _stream(times, tokens=None):
    return {"first_token": times[0], "chunk_times": times,
            "chunk_tokens": tokens or [1] * len(times), "last_chunk": times[-1]}


def _sample(ongoing_times, shorts, prompt_tokens=1000, first_token=12.0):
    return {
        "rep": 0, "prefill_tokens": 1000, "before_s": 5.0, "idle_ttft_s": 0.01,
        "ongoing": _stream(ongoing_times),
        "long": {"submitted": 5.0, "first_token": first_token, "prompt_tokens": prompt_tokens},
        "shorts": shorts,
    }


# 100 tok/s before; submitted at 5.0; tokenising until 6.0 (still 100 tok/s); then one token
# per 1 s engine step until the long request's first token at 12.0; then decode resumes.
ONGOING = ([round(0.01 * i, 2) for i in range(1, 601)] + [7.0, 8.0, 9.0, 10.0, 11.0, 12.0]
           + [12.0 + 0.01 * i for i in range(1, 50)])


def test_client_and_engine_windows_differ_by_the_tokenising_stretch():
    m = metrics_of(_sample(ONGOING, []))
    assert m["windows"]["engine"]["start"] == pytest.approx(6.0)
    assert m["engine_delay_s"] == pytest.approx(1.0)
    assert m["decode_tokens_client"] == 106  # 100 undisturbed + 6 during the prefill
    assert m["decode_tokens"] == 6
    assert m["before_tok_s"] == pytest.approx(100, rel=0.02)
    assert m["decode_share"] == pytest.approx(1 / 100, rel=0.05)
    assert m["decode_share_client"] > 10 * m["decode_share"]
    assert m["headline_window"] == "engine"
    assert m["gap_p95"] == pytest.approx(1.0)
    assert m["prefill_tok_s"] == pytest.approx(1000 / 6)


def test_a_short_request_before_the_engine_started_does_not_count():
    shorts = [{"submitted": 5.5, "first_token": 5.6}, {"submitted": 7.0, "first_token": 12.1}]
    m = metrics_of(_sample(ONGOING, shorts))
    assert [s["valid"] for s in m["shorts"]] == [False, True]
    assert m["shorts"][0]["in_client_window"]
    assert m["short_ttft_s"] == pytest.approx(5.1)
    assert m["admission_ratio"] == pytest.approx(510)


def test_a_stream_that_ends_inside_the_window_invalidates_the_repetition():
    ended = [t for t in ONGOING if t < 10.5]
    m = metrics_of(_sample(ended, []))
    assert not m["outlived"] and not m["valid"]
    assert summarize_reps([OverlapMetrics.model_validate(m)]).valid_reps == 0


def test_a_long_prompt_of_the_wrong_length_invalidates_the_repetition():
    m = metrics_of(_sample(ONGOING, [], prompt_tokens=999))
    assert not m["prompt_tokens_exact"] and not m["valid"]


def test_no_stall_falls_back_to_the_client_window():
    steady = [round(0.01 * i, 2) for i in range(1, 1400)]
    m = metrics_of(_sample(steady, []))
    assert m["engine_start_source"].startswith("client")
    assert m["windows"]["engine"]["start"] == 5.0


def test_prefill_prediction_grows_faster_than_linear():
    points = [(1000, 1.0), (2000, 2.5)]  # superlinear
    assert predict_prefill_s(points, 8000) > 8.0 * 1.25
    assert predict_prefill_s([(1000, 1.0), (2000, 2.0)], 8000) == pytest.approx(8.0)


def test_no_chunk_before_the_prefill_leaves_no_baseline_and_no_valid_repetition():
    late = [t for t in ONGOING if t > 5.0]
    m = metrics_of(_sample(late, []))
    assert not m["before_tok_s"] and not m["valid"]


def test_a_stream_flushing_backlog_inside_the_window_gives_no_decode_metrics():
    flushed = sorted(ONGOING + [9.5 + 0.0001 * i for i in range(300)])
    m = metrics_of(_sample(flushed, [{"submitted": 7.0, "first_token": 12.1}]))
    assert not m["delivery"]["ok"] and m["delivery"]["largest_burst_tokens"] >= 300
    assert m["decode_share"] is None and m["decode_tokens"] is None and m["gap_p95"] is None
    assert m["valid"] and m["admission_ratio"] is not None  # admission is still measured


def test_a_stalled_baseline_gives_no_decode_metrics():
    stalled = [t for t in ONGOING if not 1.0 < t < 4.0]
    m = metrics_of(_sample(stalled, []))
    assert m["delivery"]["baseline_max_gap_s"] > 1.0 and m["decode_share"] is None
