"""Session admission on the event loop: the table's rule (session_table.py) with requests held
open while their session waits, the replicas' budgets kept current, the metrics, and the
answer a request gets when its session waited too long.

A new session's request is held with no byte sent; when the session is admitted every request
it has waiting goes on at once. Past `--session-wait` the request is refused with the
protocol's own overload answer, which the SDKs retry (session_http.py renders it). A ticker
moves idle sessions out and admits waiters as room appears; the end of a turn and a waiter
giving up also look at once.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Callable, Sequence
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from sm121.errors import Sm121Error
from sm121.gateway.replicas import Replica
from sm121.gateway.routing import rendezvous
from sm121.gateway.session_table import (
    Budget,
    QueueFull,
    SessionSettings,
    SessionTable,
    budget_of,
)
from sm121.memory.working_set import WorkingSet

log = logging.getLogger("sm121.gateway")
TICK_S = 0.5
_WAIT_BUCKETS = (0.001, 0.01, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600)
P = "sm121_gateway_"


class SessionMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.sessions = Gauge(f"{P}sessions", "Sessions by admission state: active (their "
                              "working sets held in the pool), waiting (queued, requests held "
                              "open), idle (left the active set after --session-idle).",
                              ["state"], registry=registry)
        self.wait = Histogram(f"{P}session_wait_seconds", "How long a new session's request "
                              "waited for its session to be admitted (0: admitted at once).",
                              buckets=_WAIT_BUCKETS, registry=registry)
        self.refusals = Counter(f"{P}session_refusals", "Requests of waiting sessions told "
                                "to retry: timeout (waited --session-wait), queue_full.",
                                ["reason"], registry=registry)
        self._state = {s: self.sessions.labels(s) for s in ("active", "waiting", "idle")}

    def states(self, table: SessionTable) -> None:
        self._state["active"].set(len(table.active))
        self._state["waiting"].set(len(table.waiting))
        self._state["idle"].set(len(table.idle))


class SessionRefused(Sm121Error):
    """The session waited its bound (or the queue is full): the request is answered with the
    protocol's overload reply, to come back after `retry_after_s`."""

    def __init__(self, reason: str, waited_s: float, retry_after_s: int, ahead: int) -> None:
        super().__init__(f"session refused: {reason}")
        self.reason, self.waited_s = reason, waited_s
        self.retry_after_s, self.ahead = retry_after_s, ahead


class SessionGate:
    def __init__(self, settings: SessionSettings, registry: CollectorRegistry,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.settings = settings
        self.table = SessionTable(settings.idle_s, settings.max_waiting)
        self.metrics = SessionMetrics(registry)
        self.clock = clock
        self._futures: dict[str, list[asyncio.Future[str]]] = {}
        self._long: dict[str, int] = {}  # replica -> tokens of long jobs in flight
        self._said: str | None = None  # the last verdict logged

    # ---- on or off -----------------------------------------------------------------------

    def verdict(self, replicas: Sequence[Replica]) -> tuple[bool, str]:
        """Whether admission is on for these replicas, and why (the start-up summary and the
        report say it)."""
        mode = self.settings.mode
        if mode == "off":
            return False, "off (--sessions off)"
        if self.settings.count is not None:
            return True, f"on: at most {self.settings.count} active sessions per replica"
        unknown = [r.name for r in replicas if not (r.pool_blocks and r.block_size)]
        if not replicas:
            return False, "auto: off until an upstream joins"
        if unknown:
            return False, (f"auto: off, {', '.join(unknown)} did not report its KV pool "
                           "(block count and size) yet")
        pools = ", ".join(f"{r.name} {r.pool_blocks:,} blocks of {r.block_size}"
                          + (f" from {r.pool_source}" if r.pool_source else "")
                          for r in replicas)
        return True, (f"auto: on, working sets fit the pool less {self.settings.reserve:.0%} "
                      f"({pools})")

    def on_for(self, pool: Sequence[Replica]) -> bool:
        return self.verdict(pool)[0]

    def say(self, replicas: Sequence[Replica]) -> None:
        """Log the verdict when it changes (a replica reported its pool, or left)."""
        _, why = self.verdict(replicas)
        if why != self._said:
            self._said = why
            log.info("session admission %s", why)

    def refresh(self, replicas: Sequence[Replica]) -> None:
        """Each replica's budget from its pool now (long jobs in flight included)."""
        for replica in replicas:
            budget = self._budget(replica)
            if budget is None:
                self.table.budgets.pop(replica.name, None)
            else:
                self.table.budgets[replica.name] = budget

    def _budget(self, replica: Replica) -> Budget | None:
        count = self.settings.count
        if count is not None:
            return Budget(capacity=count, block_size=None)
        if self.settings.mode == "off" or not (replica.pool_blocks and replica.block_size):
            return None
        return budget_of(replica.pool_blocks, replica.block_size, self.settings.reserve,
                         self._long.get(replica.name, 0))

    # ---- the request path ----------------------------------------------------------------

    def active_home(self, session: str, pool: Sequence[Replica]) -> Replica | None:
        """A turn of an active session passes: its replica (moved to the healthy one with
        the most headroom if its own left the rotation). None: not active."""
        name = self.table.turn(session, self.clock())
        if name is None:
            return None
        by_name = {r.name: r for r in pool}
        home = by_name.get(name)
        if home is None or not home.healthy:
            healthy = [r for r in pool if r.healthy] or list(pool)
            home = max(healthy, key=lambda r: self.table.headroom(r.name))
            self.table.move(session, home.name)
        return home

    def adopt(self, session: str, ws: WorkingSet, pool: Sequence[Replica]) -> Replica:
        """A session admitted while admission is not on yet: active on its rendezvous
        owner (where routing would send it), whatever the room."""
        home = rendezvous(session, [r for r in pool if r.healthy] or pool)[0]
        self.table.adopt(session, home.name, ws, self.clock())
        self.metrics.states(self.table)
        return home

    async def enter(self, session: str, ws: WorkingSet, pool: Sequence[Replica]
                    ) -> tuple[Replica, float]:
        """A request of a session that is not active: admitted (its replica, and how long it
        waited: 0.0 when admitted at once), or SessionRefused past the wait bound or with the
        queue full."""
        self.refresh(pool)
        self.pump()  # sessions idle by now leave first: their room is this one's to take
        healthy = [r for r in pool if r.healthy] or list(pool)
        candidates = tuple(r.name for r in healthy if r.name in self.table.budgets)
        started = self.clock()
        try:
            name = self.table.arrive(session, ws, candidates, started)
        except QueueFull as exc:
            self._refuse("queue_full", 0.0)
            raise SessionRefused("queue_full", 0.0, self.retry_after(), exc.waiting) from exc
        waited = 0.0
        if name is None:
            name = await self._wait(session, started)
            waited = self.clock() - started
        self.metrics.wait.observe(waited)
        self.metrics.states(self.table)
        return next(r for r in pool if r.name == name), waited

    async def _wait(self, session: str, started: float) -> str:
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._futures.setdefault(session, []).append(future)
        self.metrics.states(self.table)
        try:
            done, _ = await asyncio.wait({future}, timeout=self.settings.wait_s)
        except asyncio.CancelledError:  # the client went away
            self._give_up(session, future)
            raise
        if done:
            return future.result()
        ahead = list(self.table.waiting).index(session) if session in self.table.waiting else 0
        self._give_up(session, future)
        waited = self.clock() - started
        self._refuse("timeout", waited)
        raise SessionRefused("timeout", waited, self.retry_after(), ahead)

    def _give_up(self, session: str, future: asyncio.Future[str]) -> None:
        waiters = self._futures.get(session, [])
        if future in waiters:
            waiters.remove(future)
        if not waiters:
            self._futures.pop(session, None)
        if future.done() and not future.cancelled():
            self.table.turn_ended(session, self.clock())  # admitted just as it gave up
        else:
            future.cancel()
            self.table.leave_queue(session)
        self.pump()

    def _refuse(self, reason: str, waited: float) -> None:
        self.metrics.refusals.labels(reason).inc()
        self.metrics.wait.observe(waited)

    def retry_after(self) -> int:
        """Seconds until room may appear: the earliest active session's idle deadline,
        within [1, 60] (the OpenAI and Anthropic SDKs honour a Retry-After up to 60 s)."""
        now, at = self.clock(), self.table.next_idle_at()
        return 60 if at is None else min(60, max(1, math.ceil(at - now)))

    def turn_done(self, session: str, ws: WorkingSet | None) -> None:
        self.table.turn_ended(session, self.clock(), ws)
        self.pump()

    def resize(self, session: str, ws: WorkingSet) -> None:
        self.table.resize(session, ws)

    def long_job(self, replica: Replica, tokens: int) -> Callable[[], None]:
        """A long-prompt lane job on `replica`: its tokens count against the reserve until it
        ends. Returns its release."""
        self._long[replica.name] = self._long.get(replica.name, 0) + tokens
        self.refresh([replica])
        released = False

        def release() -> None:
            nonlocal released
            if not released:
                released = True
                self._long[replica.name] -= tokens
                self.refresh([replica])
                self.pump()
        return release

    # ---- time --------------------------------------------------------------------------

    def pump(self) -> None:
        """Idle sessions leave; waiters that now fit are admitted and their requests go."""
        now = self.clock()
        gone = self.table.expire(now)
        if gone:
            log.debug("sessions idle past %g s: %d left the active set", self.settings.idle_s,
                      len(gone))
        for session, replica, _ in self.table.admit_waiting(now):
            for future in self._futures.pop(session, []):
                if not future.done():
                    future.set_result(replica)
        self.metrics.states(self.table)

    async def run(self, replicas: Callable[[], Sequence[Replica]]) -> None:
        while True:
            await asyncio.sleep(TICK_S)
            current = replicas()
            self.say(current)
            names = {r.name for r in current}
            for gone in [n for n in self.table.budgets if n not in names]:
                del self.table.budgets[gone]  # its sessions move on their next turn
            self.refresh(current)
            self.pump()

    # ---- the report ----------------------------------------------------------------------

    def report(self, replicas: Sequence[Replica]) -> dict[str, Any]:
        on, why = self.verdict(replicas)
        self.refresh(replicas)  # the pools as they are now, not as of the last tick
        now, t = self.clock(), self.table
        budgets = {name: b for name, b in t.budgets.items()}
        sources = {r.name: r.pool_source for r in replicas}

        def blocks(replica: str, ws: WorkingSet) -> int | None:
            budget = budgets.get(replica)
            return budget.units(ws) if budget is not None and budget.block_size else None

        return {
            "admission": {"on": on, "why": why, "mode": self.settings.mode,
                          "wait_s": self.settings.wait_s, "idle_s": self.settings.idle_s,
                          "reserve": self.settings.reserve},
            "replicas": [{"name": name, "pool_blocks": b.pool_blocks,
                          "pool_source": sources.get(name), "block_size": b.block_size,
                          "reserve_blocks": b.reserve_blocks,
                          "capacity": b.capacity, "used": t.used(name),
                          "long_job_tokens": self._long.get(name, 0)}
                         for name, b in budgets.items()],
            "active": [{"session": a.session, "replica": a.replica, "tokens": a.ws.tokens,
                        "blocks": blocks(a.replica, a.ws), "inflight": a.inflight,
                        "active_s": round(now - a.since, 3),
                        "idle_for_s": 0.0 if a.inflight else round(now - a.last_seen, 3)}
                       for a in t.active.values()],
            "waiting": [{"session": w.session, "tokens": w.ws.tokens, "requests": w.requests,
                         "waited_s": round(now - w.since, 3)} for w in t.waiting.values()],
            "idle": [{"session": i.session, "replica": i.replica, "tokens": i.ws.tokens,
                      "idle_since_s": round(now - i.since, 3)} for i in t.idle.values()],
        }
