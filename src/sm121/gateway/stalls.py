"""The stall watch: a replica gone silent while requests wait on it, that does not answer
/health either, is given up on: ejected, and its requests ended, so their clients retry on a
survivor instead of waiting on a hung engine (a frozen process, a wedged host) forever.

Why beside the health rounds (health.py): they eject a replica that stops answering, so new
requests go elsewhere, but the requests already on it would hang on until their clients gave
up, because a hung engine's connections stay open. Silence alone is no verdict: a long
prefill sends nothing for seconds on a healthy engine, and a slow client pauses the reading.
So silence only prompts a /health probe, and both bounds are long (config.py says why). Only a
replica with a healthy peer serving the same model is watched: with nowhere to retry, ending
its streams would only risk cutting a live one short."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping, Sequence

import aiohttp

from sm121.engines.client import EngineClient
from sm121.gateway.config import RoutingSettings
from sm121.gateway.replicas import Replica

log = logging.getLogger("sm121.gateway")
_MAX_TICK_S = 0.25


class StallWatch:
    def __init__(self, session: Callable[[], aiohttp.ClientSession],
                 replicas: Callable[[], Sequence[Replica]], headers: Mapping[str, str],
                 settings: RoutingSettings) -> None:
        self._session, self._replicas, self._headers = session, replicas, headers
        self._settings = settings
        self._quiet_since: dict[str, float] = {}  # per replica: silent, with requests, since
        self._probes: dict[str, asyncio.Task[None]] = {}

    async def run(self) -> None:
        tick = min(_MAX_TICK_S, self._settings.stall_s / 4)
        while True:
            await asyncio.sleep(tick)
            self.tick(time.monotonic())

    def tick(self, now: float) -> None:
        replicas = self._replicas()
        for replica in replicas:
            pool = replica.pool
            heard = pool.heard_from()  # always asked: it marks what was read as seen
            if heard or not pool.busy or not _has_peer(replica, replicas):
                self._quiet_since[replica.name] = now
                continue
            since = self._quiet_since.setdefault(replica.name, now)
            if now - since >= self._settings.stall_s and replica.name not in self._probes:
                self._probes[replica.name] = asyncio.create_task(self._probe(replica))

    async def _probe(self, replica: Replica) -> None:
        timeout = self._settings.stall_probe_timeout_s
        try:
            engine = EngineClient(self._session(), replica.url, self._headers)
            if await engine.healthy(timeout):
                self._quiet_since[replica.name] = time.monotonic()  # alive: count afresh
            else:  # ejected already by the health rounds, maybe: its requests still wait
                replica.eject("stalled")
                ended = replica.pool.abandon_busy(
                    f"the upstream {replica.name} went silent and did not answer /health "
                    f"within {timeout:g} s")
                log.warning("replica %s: silent for %g s and no /health answer; %d request(s) "
                            "on it ended for their clients to retry", replica.name,
                            self._settings.stall_s, ended)
        finally:
            del self._probes[replica.name]

    def stop(self) -> None:
        for task in self._probes.values():
            task.cancel()


def _has_peer(replica: Replica, replicas: Sequence[Replica]) -> bool:
    """Another healthy replica serves one of its models (its own health aside: one the
    health rounds ejected may still hold requests)."""
    return any(
        other is not replica and other.healthy and not set(other.models).isdisjoint(
            replica.models) for other in replicas)
