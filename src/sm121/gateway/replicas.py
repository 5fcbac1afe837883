"""One upstream engine as the gateway holds it: its own admission lanes, what it serves (read
from its /v1/models), its health, and its routing counters.

Health has two sources. Outcomes of real requests: a connection that is refused, or dies
mid-way, ejects the replica at once (its engine is gone, and the next request should not be
the one to find out); answers with a 5xx status eject it when they become a large share of its
recent outcomes. And its /health, asked every health interval by the monitor (health.py), which
re-admits an ejected replica once it answers again and it has been out for a while. A replica
silent while requests wait on it is asked at once by the stall watch (stalls.py).

Proof and suspicion are told apart. A refused connect (nothing listens on the port) or a
connection dropped mid-answer is proof: the engine is gone. No answer in time (a /health past
its timeout, a connect past its timeout) is only suspicion: a loaded host stalls the gateway
itself, and a stall longer than a timeout fires the timer before the answer that already
arrived is read. Suspicion ejects a replica only while another healthy replica serves each of
its models (`alone`): the last one stays in the rotation. Envoy's outlier detection caps
ejections the same way (max_ejection_percent, "the maximum % of an upstream cluster that can
be ejected", envoyproxy.io/docs/envoy/latest/api-v3/config/cluster/v3/outlier_detection.proto),
and past its panic threshold it "will disregard health status and balance amongst all hosts"
(envoyproxy.io/docs/envoy/latest/intro/arch_overview/upstream/load_balancing/panic_threshold):
ejecting a model's last replica on suspicion frees nothing, and only makes /v1/models and the
gateway's /health answer 503 for an engine that may be serving.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Iterable
from typing import Any

from sm121.gateway.admission import Admission
from sm121.gateway.config import RoutingSettings, UpstreamSpec
from sm121.gateway.metrics import GatewayMetrics
from sm121.gateway.relay import UpstreamPool

log = logging.getLogger("sm121.gateway")
_MAX_OUT_S = 30.0  # the longest an ejected replica that keeps failing waits between tries


class Replica:
    def __init__(self, spec: UpstreamSpec, metrics: GatewayMetrics,
                 settings: RoutingSettings, connect_timeout_s: float = 5.0) -> None:
        self.spec, self.name, self.url = spec, spec.name, spec.url
        self.settings = settings
        self.pool = UpstreamPool(spec.url, connect_timeout_s)  # the proxied requests' connections
        self.admission = Admission(spec.max_inflight, spec.max_inflight_per_session,
                                   spec.long_lane, metrics)
        self.models: tuple[str, ...] = ()  # served names, from /v1/models
        self.cards: list[dict[str, Any]] = []  # its /v1/models entries, for the union
        self.discovered = False
        self.max_model_len = spec.max_model_len
        self.block_size: int | None = None
        self.pool_blocks: int | None = None  # its KV pool in blocks (session admission)
        self.pool_source: str | None = None  # where that pool was read
        # Optimistic at the start: the first health round (within a second) corrects it, and a
        # gateway started beside a booting engine must not refuse what the engine could take.
        self.healthy = True
        self.ejected_at = 0.0
        self._out_s = settings.readmit_after_s
        self._outcomes: deque[bool] = deque(maxlen=settings.error_window)
        # The same counts as the metrics, for /sm121/upstreams; "spared": times it was kept in
        # the rotation on suspicion as the last healthy replica of a model (suspected()).
        self.counts = {"affinity": 0, "spill": 0, "round_robin": 0, "spilled_away": 0,
                       "ejections": 0, "readmissions": 0, "spared": 0}
        self._spared = False  # kept in the rotation on suspicion, since the last good round
        # Children bound once: the request path does no label lookups.
        self._routed = {how: metrics.routed.labels(self.name, how)
                        for how in ("affinity", "spill", "round_robin")}
        self._spills = {reason: metrics.spills.labels(self.name, reason)
                        for reason in ("saturated", "unhealthy")}
        self._metrics = metrics
        self._healthy_gauge = metrics.healthy.labels(self.name)
        self._inflight_gauge = metrics.replica_inflight.labels(self.name)
        self._healthy_gauge.set(1)

    # ---- load --------------------------------------------------------------------------

    def load(self) -> float:
        gate = self.admission.general
        return (gate.held + gate.waiting) / gate.capacity

    def saturated(self, now: float) -> bool:
        """In flight at its cap, someone already queued, or a recent admission waited longer
        than the bound: a new request here would wait."""
        gate = self.admission.general
        return (gate.held >= gate.capacity or gate.waiting > 0
                or self.admission.recent_wait(now) > self.settings.spill_queue_wait_s)

    def started(self) -> None:
        self._inflight_gauge.inc()

    def finished(self) -> None:
        self._inflight_gauge.dec()

    # ---- routing counters -------------------------------------------------------------

    def count_route(self, how: str) -> None:
        self.counts[how] += 1
        self._routed[how].inc()

    def count_spill(self, reason: str) -> None:
        self.counts["spilled_away"] += 1
        self._spills[reason].inc()

    # ---- health -----------------------------------------------------------------------

    def record(self, ok: bool) -> None:
        """One answered request: a 5xx counts against the replica, anything else for it."""
        self._outcomes.append(ok)
        if ok or not self.healthy:
            return
        errors = self._outcomes.count(False)
        if errors >= self.settings.min_errors and \
                errors / len(self._outcomes) > self.settings.error_rate:
            self.eject("error_rate")

    def failed(self, reason: str) -> None:
        """Proof: the connection was refused or died: the engine is not there now."""
        self._outcomes.append(False)
        self.eject(reason)

    def suspected(self, reason: str, last: bool) -> None:
        """Suspicion: no answer in time. Ejected unless it is the `last` healthy replica of
        one of its models (see the module's docstring). Not an outcome: a string of slow
        rounds must not make the next 5xx answer look like an error rate."""
        if not last:
            self.eject(reason)
        elif self.healthy and not self._spared:
            self._spared = True  # said once per streak: steady() ends it
            self.counts["spared"] += 1
            log.warning("replica %s kept in the rotation despite %s: it is the last healthy "
                        "replica of %s, and no answer in time is no proof of a dead engine",
                        self.name, reason, ", ".join(self.models) or "its model")

    def eject(self, reason: str) -> None:
        if not self.healthy:
            return
        self.healthy = False
        self.ejected_at = time.monotonic()
        self._healthy_gauge.set(0)
        self.counts["ejections"] += 1
        self._metrics.ejections.labels(self.name, reason).inc()
        log.warning("replica %s ejected (%s); its sessions go to the others", self.name, reason)

    def may_readmit(self, now: float) -> bool:
        return not self.healthy and now - self.ejected_at >= self._out_s

    def readmit(self) -> None:
        self.healthy = True
        self._outcomes.clear()
        self._healthy_gauge.set(1)
        self.counts["readmissions"] += 1
        self._metrics.readmissions.labels(self.name).inc()
        log.info("replica %s re-admitted: its /health answers again", self.name)

    def probe_failed_while_out(self) -> None:
        """Still down: wait longer before the next try, up to a bound."""
        self._out_s = min(self._out_s * 2, _MAX_OUT_S)

    def steady(self) -> None:
        """A health round passed while in the rotation: the next ejection waits the least."""
        self._out_s = self.settings.readmit_after_s
        self._spared = False

    def learned(self, cards: list[dict[str, Any]], max_model_len: int | None,
                block_size: int | None, pool_blocks: int | None = None) -> None:
        self.cards = cards
        self.models = tuple(str(card["id"]) for card in cards if "id" in card)
        self.discovered = bool(self.models)
        if self.spec.max_model_len is None and max_model_len is not None:
            self.max_model_len = max_model_len
        self.block_size = block_size or self.block_size
        self._learn_pool(pool_blocks)

    def _learn_pool(self, reported_blocks: int | None) -> None:
        """The pool session admission budgets: the engine's own (/metrics), else the spec's
        (a run's boot log, where /metrics gives no block count), in the engine's blocks;
        a pool given by hand wins over both. Once known, kept."""
        spec = self.spec
        blocks = spec.pool_tokens // self.block_size \
            if spec.pool_tokens and self.block_size else None
        if blocks and (spec.pool_overrides or not reported_blocks):
            self.pool_blocks, self.pool_source = blocks, spec.pool_source
        elif reported_blocks:
            self.pool_blocks, self.pool_source = reported_blocks, "its /metrics"

    def summary(self) -> dict[str, Any]:
        gate = self.admission.general
        return {"name": self.name, "url": self.url, "models": list(self.models),
                "healthy": self.healthy, "discovered": self.discovered,
                "inflight": gate.held, "queued": gate.waiting, "capacity": gate.capacity,
                "max_model_len": self.max_model_len, "pool_blocks": self.pool_blocks,
                "pool_source": self.pool_source, "block_size": self.block_size,
                "routing": dict(self.counts)}


def alone(replica: Replica, replicas: Iterable[Replica]) -> bool:
    """No other healthy replica serves one of its models (any other healthy replica, while
    it has not said what it serves): ejecting it would leave that model with none."""
    others = [r for r in replicas if r is not replica and r.healthy]
    if not replica.models:
        return not others
    return any(not any(model in other.models for other in others) for model in replica.models)
