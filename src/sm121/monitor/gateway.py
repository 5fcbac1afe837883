"""The gateway panel: sm121's own gateway /metrics over the last interval (lanes, policy,
locality, upstream health)."""

from __future__ import annotations

from typing import Any

from sm121.engines.metrics_snapshot import Snapshot, bucket_delta, counter_delta, quantile

P = "sm121_gateway_"


def is_gateway(snapshot: Snapshot) -> bool:
    return snapshot.has(f"{P}inflight") or snapshot.has(f"{P}requests_total")


def gateway_panel(before: Snapshot, after: Snapshot) -> dict[str, Any]:
    wait = {lane: quantile(_lane_buckets(before, after, lane), 0.95)
            for lane in sorted(after.by_label(f"{P}queue_depth", "lane"))}
    return {
        "inflight": after.by_label(f"{P}inflight", "lane"),
        "queue_depth": after.by_label(f"{P}queue_depth", "lane"),
        "wait_p95_s": {lane: None if v is None else round(v, 4) for lane, v in wait.items()},
        "requests": _delta(before, after, f"{P}requests_total"),
        "stripped": _delta(before, after, f"{P}params_stripped_total"),
        "rejected": _delta(before, after, f"{P}params_rejected_total"),
        "refused": _delta(before, after, f"{P}refused_total"),
        "locality_warnings": _delta(before, after, f"{P}locality_warnings_total"),
        "upstream_failures": _by_label_delta(before, after, f"{P}upstream_errors_total", "kind"),
        # Session admission (docs/sessions.md): sessions by state now, how long new ones
        # waited (p95 over the interval), and how many were told to retry.
        "sessions": after.by_label(f"{P}sessions", "state"),
        "session_wait_p95_s": _round(quantile(bucket_delta(
            before, after, f"{P}session_wait_seconds"), 0.95)),
        "session_refusals": _delta(before, after, f"{P}session_refusals_total"),
    }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def _delta(before: Snapshot, after: Snapshot, name: str) -> float:
    return counter_delta(before, after, name) or 0.0


def _by_label_delta(before: Snapshot, after: Snapshot, name: str, label: str
                    ) -> dict[str, float]:
    now, then = after.by_label(name, label), before.by_label(name, label)
    return {key: value - then.get(key, 0.0) if value >= then.get(key, 0.0) else value
            for key, value in now.items()}


def _lane_buckets(before: Snapshot, after: Snapshot, lane: str) -> dict[float, float]:
    """The queue-wait histogram of one lane: its series picked out by label."""
    return bucket_delta(_only_lane(before, lane), _only_lane(after, lane),
                        f"{P}queue_wait_seconds")


def _only_lane(snapshot: Snapshot, lane: str) -> Snapshot:
    name = f"{P}queue_wait_seconds_bucket"
    series = {k: v for k, v in snapshot.samples.get(name, {}).items()
              if dict(k).get("lane") == lane}
    return Snapshot(snapshot.at, {name: series})
