"""Prometheus text as vLLM's /metrics serves it: counters summed over label sets, and the
labels of info gauges (e.g. `vllm:cache_config_info` carries the KV block size)."""

from __future__ import annotations

import re

_SAMPLE = re.compile(r"^([A-Za-z_:][\w:]*)(\{[^}]*\})?\s+(\S+)")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def parse_metrics(text: str) -> dict[str, float]:
    """Prometheus text -> {metric name: value summed over its label sets}."""
    totals: dict[str, float] = {}
    for name, _, value in parse_samples(text):
        totals[name] = totals.get(name, 0.0) + value
    return totals


def metric_labels(text: str, name: str) -> dict[str, str]:
    """The labels of the first sample of `name` (info gauges such as cache_config_info)."""
    for line in text.splitlines():
        match = _SAMPLE.match(line)
        if match and match.group(1) == name and match.group(2):
            return dict(_LABEL.findall(match.group(2)))
    return {}


def parse_samples(text: str) -> list[tuple[str, dict[str, str], float]]:
    """Every sample with its labels: (name, labels, value). Histograms need this form, since
    their buckets differ only by the `le` label."""
    samples = []
    for line in text.splitlines():
        match = _SAMPLE.match(line)
        if match is None:
            continue
        try:
            value = float(match.group(3))
        except ValueError:
            continue
        labels = dict(_LABEL.findall(match.group(2))) if match.group(2) else {}
        samples.append((match.group(1), labels, value))
    return samples
