"""The health monitor: every interval, each replica's /health; ejected replicas are re-admitted
when it answers again, and replicas are asked what they serve (/v1/models) until they say.

A replica in the rotation is ejected at once when its connect is refused (proof: nothing
listens on its port), and after two failed health rounds in a row otherwise (one slow answer
from an engine busy tokenizing a huge prompt is not a death). A round that failed only for
want of an answer in time is suspicion, not proof: it never ejects the last healthy replica of
a model (replicas.py says why). A request that finds it gone ejects it at once (forward.py).
Rounds run every replica at once, so one hung engine does not delay the verdict on the others.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Mapping, Sequence

import aiohttp

from sm121.engines.client import EngineClient, Health
from sm121.gateway import upstream as up
from sm121.gateway.config import RoutingSettings
from sm121.gateway.replicas import Replica, alone

log = logging.getLogger("sm121.gateway")
_FAILS_TO_EJECT = 2


class HealthMonitor:
    def __init__(self, session: Callable[[], aiohttp.ClientSession],
                 replicas: Callable[[], Sequence[Replica]], headers: Mapping[str, str],
                 settings: RoutingSettings, on_change: Callable[[], None]) -> None:
        self._session, self._replicas, self._headers = session, replicas, headers
        self._settings, self._on_change = settings, on_change
        self._fails: dict[str, int] = {}

    async def run(self) -> None:
        while True:
            await self.round()
            await asyncio.sleep(self._settings.health_interval_s)

    async def round(self) -> None:
        await asyncio.gather(*(self.check(r) for r in self._replicas()))

    async def check(self, replica: Replica) -> None:
        engine = EngineClient(self._session(), replica.url, self._headers)
        verdict = await engine.health(self._settings.health_timeout_s)
        ok = verdict is Health.OK
        if replica.healthy:
            fails = 0 if ok else self._fails.get(replica.name, 0) + 1
            self._fails[replica.name] = fails
            if verdict is Health.REFUSED:
                replica.failed("refused")
            elif verdict is Health.SILENT and fails >= _FAILS_TO_EJECT:
                replica.suspected("health", last=alone(replica, self._replicas()))
            elif fails >= _FAILS_TO_EJECT:
                replica.eject("health")
            elif ok:
                replica.steady()
            if replica.healthy and not replica.discovered and verdict is not Health.SICK:
                # A slow /health is no reason to leave the models unknown (with two replicas
                # unknown, every request would be refused); then bounded, for a hung engine.
                bound = None if ok else self._settings.health_timeout_s
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.learn(replica), bound)
            return
        if not replica.may_readmit(time.monotonic()):
            return
        if ok and await self.learn(replica):
            self._fails[replica.name] = 0
            replica.readmit()
            self._on_change()
        else:
            replica.probe_failed_while_out()

    async def learn(self, replica: Replica) -> bool:
        """Ask what it serves; True once it has said."""
        facts = await up.discover(self._session(), replica.url, self._headers)
        if not facts.models:
            return False
        known_before = replica.models
        replica.learned(list(facts.models), facts.max_model_len, facts.block_size,
                        facts.pool_blocks)
        if replica.models != known_before:
            log.info("replica %s serves %s (max_model_len %s, block size %s)", replica.name,
                     ", ".join(replica.models), replica.max_model_len, replica.block_size)
            self._on_change()
        return True
