"""The engine panel: what an engine's /metrics says about the last interval.

Gauges are read as they are now; counters become rates and histograms quantiles over the
interval between two scrapes (so a number means "lately", not "since boot")."""

from __future__ import annotations

from typing import Any

from sm121.engines.metrics_snapshot import Snapshot, counter_delta, delta_quantiles, first_name, rate
from sm121.engines.registry import metric_names

# The names every registered engine uses for each thing (the adapters' one table, older names
# after newer ones); the first one exported wins.
_NAMES = metric_names()
RUNNING = _NAMES.running
WAITING = _NAMES.waiting
KV_USAGE = _NAMES.kv_usage
PREFIX_QUERIES = _NAMES.prefix_queries
PREFIX_HITS = _NAMES.prefix_hits
PROMPT_TOKENS = _NAMES.prompt_tokens
GENERATION_TOKENS = _NAMES.generation_tokens
PREEMPTIONS = _NAMES.preemptions
SUCCESS = _NAMES.success
SPEC_ACCEPTED = _NAMES.spec_accepted
SPEC_DRAFT = _NAMES.spec_draft
TTFT = _NAMES.ttft
ITL = _NAMES.itl
E2E = _NAMES.e2e


def engine_panel(before: Snapshot, after: Snapshot) -> dict[str, Any]:
    """One interval of the engine, as plain JSON values (None: not exported / nothing seen)."""
    kv = _gauge(after, KV_USAGE)
    return {
        "running": _gauge(after, RUNNING),
        "waiting": _gauge(after, WAITING),
        "kv_usage_pct": None if kv is None else round(100 * kv, 2),
        "prefix_hit_rate_pct": _prefix_hit_pct(before, after),
        "prompt_tok_s": _rate(before, after, PROMPT_TOKENS),
        "generation_tok_s": _rate(before, after, GENERATION_TOKENS),
        "requests_done": _delta(before, after, SUCCESS),
        "preemptions": _delta(before, after, PREEMPTIONS),
        "spec_acceptance_pct": _ratio_pct(before, after, SPEC_ACCEPTED, SPEC_DRAFT),
        "ttft_s": _quantiles(before, after, TTFT),
        "itl_s": _quantiles(before, after, ITL),
        "e2e_s": _quantiles(before, after, E2E),
        "interval_s": round(after.at - before.at, 3),
    }


def _gauge(snapshot: Snapshot, names: tuple[str, ...]) -> float | None:
    name = first_name(snapshot, *names)
    return None if name is None else snapshot.value(name)


def _rate(before: Snapshot, after: Snapshot, names: tuple[str, ...]) -> float | None:
    name = first_name(after, *names)
    value = None if name is None else rate(before, after, name)
    return None if value is None else round(value, 2)


def _delta(before: Snapshot, after: Snapshot, names: tuple[str, ...]) -> float | None:
    name = first_name(after, *names)
    return None if name is None else counter_delta(before, after, name)


def _ratio_pct(before: Snapshot, after: Snapshot, part: tuple[str, ...],
               whole: tuple[str, ...]) -> float | None:
    """part/whole over the interval; None when the engine does not export them (e.g. no
    speculative decoding) or nothing happened."""
    top, bottom = _delta(before, after, part), _delta(before, after, whole)
    if top is None or not bottom:
        return None
    return round(100 * top / bottom, 2)


def _prefix_hit_pct(before: Snapshot, after: Snapshot) -> float | None:
    """Hits over queries over the interval; an engine without a queries counter counts its
    queries as its prompt tokens without the hits plus the hits (MetricNames.queries_in)."""
    names = (*PREFIX_HITS, *PREFIX_QUERIES, *_NAMES.prompt_without_hits)
    deltas = {n: d for n in names if (d := counter_delta(before, after, n)) is not None}
    hits, queries = next((deltas[n] for n in PREFIX_HITS if n in deltas), None), \
        _NAMES.queries_in(deltas)
    if hits is None or not queries:
        return None
    return round(100 * hits / queries, 2)


def _quantiles(before: Snapshot, after: Snapshot,
               names: tuple[str, ...]) -> dict[str, float | None]:
    name = next((n for n in names if after.has(f"{n}_bucket")), None)
    if name is None:
        return {"p50": None, "p95": None, "count": None}
    values = delta_quantiles(before, after, name)
    return {k: (None if v is None else round(v, 4)) for k, v in values.items()}
