"""Rules 2, 3, 5 and 6 on the pure metric functions."""

import pytest

from sm121.bench.stats import (
    Window,
    admission_valid,
    clipped_gaps,
    decode_share,
    engine_start,
    gap_stats,
    inter_token_intervals,
    largest_burst,
    outlives,
    rate,
    summarize,
    tokens_in,
)


def test_gaps_are_clipped_to_the_window():
    # chunks at 0, 1, 5, 6; window [2, 5.5]: the stall 1..5 counts only from 2, 5..6 until 5.5
    assert clipped_gaps([0, 1, 5, 6], Window(2, 5.5)) == pytest.approx([3.0, 0.5])


def test_a_stall_spanning_the_whole_window_is_the_window():
    assert clipped_gaps([0, 10], Window(2, 5)) == pytest.approx([3.0])


def test_gap_stats_report_p50_p95_and_max():
    stats = gap_stats([0.1] * 19 + [2.0])
    assert stats["p50"] == pytest.approx(0.1)
    assert stats["max"] == 2.0
    assert 0.1 < stats["p95"] <= 2.0


def test_tokens_in_window_count_ids_by_arrival():
    times, tokens = [0.5, 1.0, 2.0, 3.0], [1, 3, 2, 1]
    assert tokens_in(times, tokens, Window(0.5, 2.0)) == 5  # (0.5, 2.0]
    assert rate(times, tokens, Window(1.0, 3.0)) == pytest.approx(1.5)


def test_decode_share_is_the_same_streams_rate_during_over_before():
    times = [i * 0.1 for i in range(1, 51)] + [5.0 + i for i in range(1, 6)]
    tokens = [1] * len(times)
    before = rate(times, tokens, Window(0.0, 5.0))
    during = rate(times, tokens, Window(5.0, 10.0))
    assert decode_share(during, before) == pytest.approx(0.1)
    assert decode_share(during, 0.0) is None


def test_a_stream_must_outlive_the_window():
    assert outlives([1, 2, 9], Window(0, 8))
    assert not outlives([1, 2, 7.9], Window(0, 8))
    assert not outlives([], Window(0, 8))


def test_admission_counts_only_inside_the_window():
    window = Window(10, 20)
    assert admission_valid(10, window)
    assert admission_valid(15, window)
    assert not admission_valid(9.9, window)
    assert not admission_valid(20, window)


def test_engine_start_is_where_the_stream_turns_from_undisturbed_to_starved():
    # steady 10 ms decode; submitted at 1.0; tokenising until 1.5; then 0.4 s engine steps
    times = [round(i * 0.01, 2) for i in range(1, 151)] + [1.9, 2.3, 2.7]
    tokens = [1] * len(times)
    start = engine_start(times, tokens, submitted=1.0, first_token=2.8, before_rate=100.0)
    assert start == pytest.approx(1.5)


def test_a_burst_of_backlog_after_submission_belongs_before_the_engine_start():
    # nothing for 4 s, then a burst of 3000 tokens, then one token per 0.5 s step
    times = [4.0 + i * 0.0003 for i in range(3000)] + [4.9 + 0.5 * i for i in range(1, 20)]
    start = engine_start(times, [1] * len(times), submitted=3.9, first_token=14.5,
                         before_rate=500.0)
    assert start == pytest.approx(4.9, abs=0.01)


def test_no_distinct_slowdown_means_the_engine_started_at_once():
    steady_slow = [1.0 + 0.5 * i for i in range(1, 20)]
    assert engine_start(steady_slow, [1] * 19, 1.0, 11.0, before_rate=100.0) is None
    steady_fast = [1.0 + 0.01 * i for i in range(1, 1000)]
    assert engine_start(steady_fast, [1] * 999, 1.0, 11.0, before_rate=100.0) is None


def test_summary_is_median_and_spread_without_nones():
    assert summarize([3.0, None, 1.0, 2.0]) == {"median": 2.0, "min": 1.0, "max": 3.0, "n": 3}
    assert summarize([None])["median"] is None


def test_a_chunk_of_k_tokens_is_k_intervals():
    assert inter_token_intervals([0.0, 0.3, 0.4], [1, 3, 1]) == pytest.approx([0.1] * 3 + [0.1])


def test_a_backlog_flush_is_a_burst_and_steps_are_not():
    steps = [1.0 + 0.3 * i for i in range(20)]
    assert largest_burst(steps, [1] * 20, Window(0, 10)) == 1
    flush = steps + [7.0 + 0.0001 * i for i in range(500)]
    assert largest_burst(sorted(flush), [1] * 520, Window(0, 10)) == 500


def test_the_tail_of_a_flush_is_not_counted_as_decode_during_the_prefill():
    # a flush of 2000 tokens 1 ms apart, then 0.3 s engine steps
    flush = [2.0 + 0.001 * i for i in range(2000)]
    steps = [4.0 + 0.3 * i for i in range(1, 30)]
    start = engine_start(flush + steps, [1] * 2029, submitted=1.9, first_token=13.0,
                         before_rate=500.0)
    assert start == pytest.approx(flush[-1])


def test_a_starved_rate_that_keeps_falling_does_not_move_the_engine_start_late():
    # undisturbed 200 tok/s until 0.3 s after submission, then one token per engine step,
    # the steps growing from 20 to 60 ms as the prefill's context grows (small chunks on a
    # GPU: the H200 runs at threshold 256, docs/results/gpu-h200/ab-reps)
    times = [round(0.005 * i, 3) for i in range(1, 261)]
    t = times[-1]
    for step in range(400):
        t += 0.02 + 0.04 * step / 400
        times.append(t)
    start = engine_start(times, [1] * len(times), submitted=1.0, first_token=t + 0.01,
                         before_rate=200.0)
    assert start == pytest.approx(1.3)


def test_a_backlog_flushed_after_a_starved_stretch_stays_inside_the_engine_window():
    # undisturbed until 1.5, starved steps, then the API server flushes 300 tokens at 5.0
    times = ([round(0.01 * i, 2) for i in range(1, 151)] + [2.0, 2.5, 3.0, 3.5, 4.0]
             + [5.0 + 0.0001 * i for i in range(300)] + [5.5, 6.0])
    start = engine_start(times, [1] * len(times), submitted=1.0, first_token=6.5,
                         before_rate=100.0)
    assert start == pytest.approx(1.5)


def test_a_stream_slowed_by_tokenising_then_starved_starts_at_the_sharper_turn():
    # 500 tok/s; after submission the API server's tokenising slows it to 150 tok/s for 0.1 s
    # (a 2-core host), then the prefill starves it to one token a second (the CPU testbed)
    times = [round(0.002 * i, 3) for i in range(1, 501)]
    times += [1.0 + round(i / 150, 4) for i in range(1, 16)]
    times += [1.1 + i for i in range(1, 20)]
    start = engine_start(times, [1] * len(times), submitted=1.0, first_token=20.5,
                         before_rate=500.0)
    assert start == pytest.approx(1.1)


def test_clopper_pearson_matches_known_exact_intervals():
    from sm121.bench.stats import binom_cdf, clopper_pearson

    lo, hi = clopper_pearson(32, 32)
    assert hi == 1.0 and abs(lo - 0.025 ** (1 / 32)) < 1e-9  # 0.8911: saturated, bounds little
    lo, hi = clopper_pearson(0, 10)
    assert lo == 0.0 and abs(hi - (1 - 0.025 ** (1 / 10))) < 1e-9  # 0.3085
    lo, hi = clopper_pearson(5, 10)  # mpmath betainc roots: 0.187086028 0.812913972
    assert abs(lo - 0.187086028) < 1e-8 and abs(hi - 0.812913972) < 1e-8
    lo, hi = clopper_pearson(29, 32)  # mpmath betainc roots: 0.749773049 0.980232820
    assert abs(lo - 0.749773049) < 1e-8 and abs(hi - 0.980232820) < 1e-8
    assert abs(binom_cdf(2, 4, 0.5) - 11 / 16) < 1e-12
    lo, hi = clopper_pearson(950, 1000)  # large n stays finite (sums in logs)
    assert 0.93 < lo < 0.95 < hi < 0.97
    with pytest.raises(ValueError):
        clopper_pearson(3, 2)


def test_difference_interval_over_boots_uses_student_t():
    from sm121.bench.stats import difference_interval, t975

    assert t975(2) == 4.303 and abs(t975(30) - 2.042) < 0.01
    diff, lo, hi = difference_interval([1.0, 2.0, 3.0], [1.0, 2.0, 3.0])
    assert diff == 0 and lo < 0 < hi
    diff, lo, hi = difference_interval([1.0, 1.1, 0.9], [2.0, 2.1, 1.9])
    assert diff == pytest.approx(-1.0) and hi < 0
    with pytest.raises(ValueError):
        difference_interval([1.0], [1.0, 2.0])
