"""One scrape of a /metrics page, and what changed between two scrapes: counters as rates,
histograms as the quantiles of the observations that arrived in between.

Here, below monitor/ and bench/, because both read it: `sm121 top` samples with it, and a
soak records the engine's state through it.

Counters are summed over their label sets unless a label is asked for; a counter that went
down (the server restarted) counts from zero again, as Prometheus' rate() does."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

from sm121.engines.client_sync import SyncEngineClient
from sm121.engines.prometheus import parse_samples

SCRAPE_TIMEOUT_S = 5.0

Labels = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Snapshot:
    """Samples of one scrape, by name then by sorted label pairs; `at` is a monotonic time."""

    at: float
    samples: dict[str, dict[Labels, float]] = field(default_factory=dict)

    @classmethod
    def parse(cls, text: str, at: float) -> Snapshot:
        samples: dict[str, dict[Labels, float]] = {}
        for name, labels, value in parse_samples(text):
            series = samples.setdefault(name, {})
            key = tuple(sorted(labels.items()))
            series[key] = series.get(key, 0.0) + value
        return cls(at, samples)

    def has(self, name: str) -> bool:
        return name in self.samples

    def value(self, name: str) -> float | None:
        """Summed over label sets; None when the server does not export it."""
        series = self.samples.get(name)
        return None if series is None else sum(series.values())

    def by_label(self, name: str, label: str) -> dict[str, float]:
        totals: dict[str, float] = {}
        for key, value in self.samples.get(name, {}).items():
            which = dict(key).get(label, "")
            totals[which] = totals.get(which, 0.0) + value
        return totals

    def buckets(self, name: str) -> dict[float, float]:
        """Cumulative bucket counts of histogram `name` (without _bucket), by upper bound."""
        counts: dict[float, float] = {}
        for key, value in self.samples.get(f"{name}_bucket", {}).items():
            bound = dict(key).get("le")
            if bound is not None:
                upper = math.inf if bound == "+Inf" else float(bound)
                counts[upper] = counts.get(upper, 0.0) + value
        return counts


def first_name(snapshot: Snapshot, *names: str) -> str | None:
    """The first of several names the server exports (metric names change between versions)."""
    return next((n for n in names if snapshot.has(n)), None)


def counter_delta(before: Snapshot, after: Snapshot, name: str) -> float | None:
    now, then = after.value(name), before.value(name)
    if now is None:
        return None
    if then is None or now < then:
        return now  # new or reset: everything counted so far happened since
    return now - then


def rate(before: Snapshot, after: Snapshot, name: str) -> float | None:
    delta = counter_delta(before, after, name)
    elapsed = after.at - before.at
    return None if delta is None or elapsed <= 0 else delta / elapsed


def bucket_delta(before: Snapshot, after: Snapshot, name: str) -> dict[float, float]:
    now, then = after.buckets(name), before.buckets(name)
    if any(now.get(b, 0.0) < c for b, c in then.items()):
        return now  # the server restarted between the scrapes
    return {bound: count - then.get(bound, 0.0) for bound, count in now.items()}


def quantile(buckets: dict[float, float], q: float) -> float | None:
    """Prometheus' histogram_quantile: linear inside the bucket holding the q-th observation.
    None when nothing was observed. Above the last finite bound it answers that bound."""
    bounds = sorted(buckets)
    if not bounds or buckets[bounds[-1]] <= 0:
        return None
    total = buckets[bounds[-1]]
    rank = q * total
    lower, below = 0.0, 0.0
    for bound in bounds:
        count = buckets[bound]
        if count >= rank:
            if math.isinf(bound):
                return lower
            inside = count - below
            return bound if inside <= 0 else lower + (bound - lower) * (rank - below) / inside
        lower, below = bound, count
    return lower


def delta_quantiles(before: Snapshot, after: Snapshot, name: str) -> dict[str, float | None]:
    """p50 and p95 of the observations made between two scrapes, and how many there were."""
    buckets = bucket_delta(before, after, name)
    count = max(buckets.values()) if buckets else 0.0
    return {"p50": quantile(buckets, 0.5), "p95": quantile(buckets, 0.95),
            "count": count if buckets else None}


def scrape(url: str, timeout_s: float = SCRAPE_TIMEOUT_S) -> Snapshot:
    """GET URL/metrics; raises EngineError when it does not answer 200."""
    text = SyncEngineClient(url, timeout_s=timeout_s).metrics_text()
    return Snapshot.parse(text, time.monotonic())
