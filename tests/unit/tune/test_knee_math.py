"""The knee and decode saturation from repetitions (bench/scenarios/knee/analysis.py), and the knee
scenario's step filter."""

import pytest

from sm121.bench.scenarios.knee.analysis import knee_of, prefill_cost, rate_at, summarize_knee
from sm121.bench.scenarios.knee.models import KneeSample, KneeSettings, StepRate
from sm121.bench.scenarios.knee.run import steps_that_fit

# engine tok/s per step, three reps each: rises until 2048, flat (within 5%) after it
PREFILL = {128: [2000, 2100, 1900], 512: [6000, 6100, 5900], 2048: [9600, 9700, 9500],
           8192: [10000, 9900, 10100], 16384: [9800, 9900, 10000]}
DECODE = {1: [50, 51, 49], 4: [190, 195, 185], 16: [600, 610, 590], 32: [620, 615, 625]}


def _samples() -> list[KneeSample]:
    out = [{"kind": "prefill", "step": 128, "rep": -1, "engine_tok_s": 1.0, "client_tok_s": 1.0}]
    for step, rates in PREFILL.items():
        out += [{"kind": "prefill", "step": step, "rep": i, "engine_tok_s": r,
                 "client_tok_s": r * 0.8} for i, r in enumerate(rates)]
    for batch, rates in DECODE.items():
        out += [{"kind": "decode", "batch": batch, "rep": i, "engine_tok_s": r,
                 "client_tok_s": r} for i, r in enumerate(rates)]
    return [KneeSample.model_validate(s) for s in out]


def test_knee_is_the_smallest_step_within_five_percent_of_the_peak_and_warmup_is_left_out():
    summary = summarize_knee(_samples())
    engine = summary.engine
    assert engine is not None and summary.client is not None
    assert engine.knee.peak_at == 8192 and engine.knee.peak == 10000
    assert engine.knee.knee_at == 2048  # 9600 >= 0.95 * 10000; 512's 6000 is not
    row128 = engine.prefill[0]
    assert row128 == StepRate(step=128, median=2000, min=1900, max=2100, n=3)
    # the client window is a constant 0.8 of the engine's here: the same knee
    assert summary.client.knee.knee_at == 2048


def test_decode_saturates_where_a_larger_batch_buys_under_five_percent():
    engine = summarize_knee(_samples()).engine
    assert engine is not None
    sat = engine.decode_saturation
    assert sat.knee_at == 16 and sat.peak_at == 32 and sat.saturated
    rising = [KneeSample(kind="decode", batch=b, rep=0, engine_tok_s=10.0 * b)
              for b in (1, 2, 4)]
    engine = summarize_knee(rising).engine
    assert engine is not None
    unsat = engine.decode_saturation
    assert unsat.knee_at == 4 and not unsat.saturated


def test_prefill_cost_against_8192_token_steps_interpolates_in_log_step():
    engine = summarize_knee(_samples()).engine
    assert engine is not None
    rows = engine.prefill
    assert prefill_cost(rows, 8192) == pytest.approx(0.0)
    assert prefill_cost(rows, 512) == pytest.approx(0.4)
    assert rate_at(rows, "step", 1024) == pytest.approx((6000 + 9600) / 2)
    assert rate_at(rows, "step", 64) == 2000 and rate_at(rows, "step", 65536) == 9900
    assert knee_of([], "step").knee_at is None


def test_steps_above_the_step_budget_or_the_context_are_dropped():
    kept, dropped = steps_that_fit(KneeSettings(steps=[128, 2048, 4096], chunk=2048), 65536)
    assert kept == [128, 2048] and dropped == [4096]
    kept, dropped = steps_that_fit(KneeSettings(steps=[128, 4096]), 4096)
    assert kept == [128] and dropped == [4096]
    assert steps_that_fit(KneeSettings(steps=[256, 128]), None) == ([128, 256], [])
