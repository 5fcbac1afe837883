"""Admission: a fair concurrency cap for every generation, and a long-prompt lane.

An engine serialises prefills. Two giant prefills in flight do not finish faster than one
after the other, but every short agent turn that arrives meanwhile waits behind both. The long
lane lets at most K long prompts be in prefill at once; the lane is released at the request's
first response byte (its prefill is done), not at its end, so a long request that is only
decoding no longer blocks the next long one.
"""

from __future__ import annotations

import time

from sm121.gateway.fair_gate import FairGate
from sm121.gateway.metrics import GatewayMetrics

GENERAL, LONG = "general", "long"


class Ticket:
    """An admitted request's hold on its slots; both releases are idempotent."""

    def __init__(self, admission: Admission, key: str, long: bool) -> None:
        self._admission, self._key = admission, key
        self._long_held = long
        self._held = True

    def prefill_done(self) -> None:
        if self._long_held:
            self._long_held = False
            self._admission.release_long(self._key)

    def release(self) -> None:
        self.prefill_done()
        if self._held:
            self._held = False
            self._admission.release_general(self._key)


class Admission:
    def __init__(self, max_inflight: int, per_session: int | None, long_lane: int,
                 metrics: GatewayMetrics) -> None:
        self.general = FairGate(max_inflight, per_session)
        self.long = FairGate(long_lane)
        # Children bound once: label lookups take a lock, and this runs on every request.
        self._depth = {lane: metrics.queue_depth.labels(lane) for lane in (GENERAL, LONG)}
        self._wait_hist = {lane: metrics.queue_wait.labels(lane) for lane in (GENERAL, LONG)}
        self._inflight = {lane: metrics.inflight.labels(lane) for lane in (GENERAL, LONG)}
        # The last general-lane wait and when it ended: routing treats a replica whose queue
        # made someone wait long, recently, as saturated.
        self.last_wait_s, self.last_wait_at = 0.0, 0.0

    async def admit(self, key: str, long: bool) -> Ticket:
        # The long lane first: a long request waiting for its lane holds no general slot, so
        # short requests keep flowing past it.
        if long:
            await self._wait(self.long, LONG, key)
        try:
            await self._wait(self.general, GENERAL, key)
        except BaseException:
            if long:
                self.release_long(key)
            raise
        return Ticket(self, key, long)

    async def _wait(self, gate: FairGate, lane: str, key: str) -> None:
        started = time.perf_counter()
        if gate.held >= gate.capacity or gate.waiting:
            self._depth[lane].inc()
            try:
                await gate.acquire(key)
            finally:
                self._depth[lane].dec()
        else:
            await gate.acquire(key)
        now = time.perf_counter()
        self._wait_hist[lane].observe(now - started)
        if lane == GENERAL:
            self.last_wait_s, self.last_wait_at = now - started, now
        # inc/dec, not set: several upstreams' admissions share the lane's gauge.
        self._inflight[lane].inc()

    def recent_wait(self, now: float, window_s: float = 2.0) -> float:
        return self.last_wait_s if now - self.last_wait_at < window_s else 0.0

    def release_long(self, key: str) -> None:
        self.long.release(key)
        self._inflight[LONG].dec()

    def release_general(self, key: str) -> None:
        self.general.release(key)
        self._inflight[GENERAL].dec()
