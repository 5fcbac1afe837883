"""Prometheus text as an engine's /metrics serves it, read by prometheus_client's own parser:
counters summed over label sets, and the labels of info gauges (an engine's cache-config
gauge, named by its adapter's MetricNames.cache_config, carries the KV block size).

A page the parser refuses as a whole (a proxy's truncated answer, one malformed line) is read
line by line, keeping every sample that parses: a monitor shows what it can."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.parser import text_string_to_metric_families

Sample = tuple[str, dict[str, str], float]


def parse_metrics(text: str) -> dict[str, float]:
    """Prometheus text -> {metric name: value summed over its label sets}."""
    totals: dict[str, float] = {}
    for name, _, value in parse_samples(text):
        totals[name] = totals.get(name, 0.0) + value
    return totals


def metric_labels(text: str, name: str) -> dict[str, str]:
    """The labels of the first sample of `name` (info gauges such as cache_config_info)."""
    return next((labels for sample, labels, _ in parse_samples(text)
                 if sample == name and labels), {})


def parse_samples(text: str) -> list[Sample]:
    """Every sample with its labels: (name, labels, value). Histograms need this form, since
    their buckets differ only by the `le` label."""
    try:
        return list(_samples(text))
    except ValueError:
        return [sample for line in text.splitlines() for sample in _line_samples(line)]


def _samples(text: str) -> Iterator[Sample]:
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            yield sample.name, dict(sample.labels), float(sample.value)


def _line_samples(line: str) -> list[Sample]:
    if not line.strip() or line.startswith("#"):
        return []
    try:
        return list(_samples(line + "\n"))
    except ValueError:
        return []
