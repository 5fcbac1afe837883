"""Counters as rates and histograms as quantiles over the interval between two scrapes."""

from __future__ import annotations

import math

import pytest

from sm121.engines.metrics_snapshot import Snapshot, bucket_delta, counter_delta, quantile, rate


def _histogram(name: str, counts: dict[str, float], labels: str = "") -> str:
    lines = [f'{name}_bucket{{{labels}le="{le}"}} {n}' for le, n in counts.items()]
    return "\n".join(lines + [f"{name}_count{{{labels.rstrip(',')}}} {max(counts.values())}"])


def test_counter_rate_and_reset() -> None:
    before = Snapshot.parse('x_total{a="1"} 10\nx_total{a="2"} 5\n', at=0.0)
    after = Snapshot.parse('x_total{a="1"} 20\nx_total{a="2"} 15\n', at=4.0)
    assert counter_delta(before, after, "x_total") == 20
    assert rate(before, after, "x_total") == 5.0
    restarted = Snapshot.parse('x_total{a="1"} 3\n', at=8.0)
    assert counter_delta(after, restarted, "x_total") == 3  # counts from zero again
    assert counter_delta(before, after, "missing") is None


def test_quantile_interpolates_inside_the_bucket() -> None:
    # 10 observations: 4 under 0.1, 4 in (0.1, 0.5], 2 in (0.5, 1].
    buckets = {0.1: 4.0, 0.5: 8.0, 1.0: 10.0, math.inf: 10.0}
    assert quantile(buckets, 0.5) == pytest.approx(0.1 + 0.4 * (5 - 4) / 4)
    assert quantile(buckets, 0.95) == pytest.approx(0.5 + 0.5 * (9.5 - 8) / 2)
    assert quantile({0.1: 0.0, math.inf: 0.0}, 0.5) is None
    assert quantile({0.1: 1.0, math.inf: 5.0}, 0.95) == 0.1  # above the last bound


def test_histogram_delta_sees_only_the_interval() -> None:
    name = "vllm:time_to_first_token_seconds"
    before = Snapshot.parse(_histogram(name, {"0.1": 100, "1.0": 100, "+Inf": 100}), 0.0)
    after = Snapshot.parse(_histogram(name, {"0.1": 100, "1.0": 110, "+Inf": 110}), 2.0)
    delta = bucket_delta(before, after, name)
    assert delta == {0.1: 0.0, 1.0: 10.0, math.inf: 10.0}
    # The 100 fast requests before the interval do not pull the median down.
    assert quantile(delta, 0.5) == pytest.approx(0.55)


def test_histogram_buckets_sum_over_other_labels() -> None:
    name = "h"
    text = (_histogram(name, {"1.0": 1, "+Inf": 2}, 'lane="a",') + "\n"
            + _histogram(name, {"1.0": 3, "+Inf": 3}, 'lane="b",'))
    assert Snapshot.parse(text, 0.0).buckets(name) == {1.0: 4.0, math.inf: 5.0}
