"""The running gateway's state: settings, metrics, the replicas (each with its admission),
the router, the health monitor, the upstreams file it watches, the upstream session, the
locality watch and the capture, with their start-up and shutdown."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

import aiohttp
from multidict import CIMultiDict

from sm121.errors import Sm121Error
from sm121.gateway import registry
from sm121.gateway import upstream as up
from sm121.gateway.body_parse import BodyParser
from sm121.gateway.capture import Capture
from sm121.gateway.config import GatewayConfig, UpstreamSpec
from sm121.gateway.forward import Forwarding
from sm121.gateway.health import HealthMonitor
from sm121.gateway.metrics import GatewayMetrics
from sm121.gateway.replicas import Replica
from sm121.gateway.routing import NoRoute, Router
from sm121.gateway.session_admission import SessionAdmission
from sm121.gateway.stalls import StallWatch
from sm121.locality.divergence import Divergence
from sm121.locality.tokenize import tokenize
from sm121.locality.watch import LocalityWatch, WatchLimits

log = logging.getLogger("sm121.gateway")
VLLM_DEFAULT_BLOCK_SIZE = 16  # used until the upstream tells its own


class Gateway:
    def __init__(self, config: GatewayConfig) -> None:
        self.config = config
        self.metrics = GatewayMetrics()
        self.router = Router(config.routing.mode)
        self.replicas: dict[str, Replica] = {}
        self.registry_verdict: registry.Verdict | None = None  # the upstreams file's last read
        self.capture = (Capture(config.capture.directory, config.capture.redact,
                                on_failure=self.metrics.capture_failures.inc,
                                session_header=config.session_header)
                        if config.capture.directory else None)
        self._session: aiohttp.ClientSession | None = None
        self.bodies = BodyParser()  # large request bodies, checked off the event loop
        self._tasks: list[asyncio.Task[None]] = []
        settings = config.locality
        self.watch = LocalityWatch(
            self._tokenize_ids, settings.block_size or VLLM_DEFAULT_BLOCK_SIZE,
            WatchLimits(early_fraction=settings.early_fraction, warn_after=settings.warn_after,
                        max_sessions=settings.max_sessions, max_pending=settings.max_pending),
            on_result=self._locality_result,
            on_skip=lambda reason: self.metrics.locality_skipped.labels(reason).inc(),
            on_evict=self._forget_session,
        )
        self.monitor = HealthMonitor(lambda: self.session, lambda: list(self.replicas.values()),
                                     self.upstream_auth(), config.routing, self.refresh)
        self.stalls = StallWatch(lambda: self.session, lambda: list(self.replicas.values()),
                                 self.upstream_auth(), config.routing)
        self.forwarding = Forwarding(
            self.metrics, config.upstream_api_key, keep_authorization=not config.api_keys,
            connect_timeout_s=config.upstream_connect_timeout_s,
            replicas=lambda: self.replicas.values())
        self.sessions = SessionAdmission(config.sessions, self.metrics.registry,
                                         lambda: self.session, self.upstream_auth)
        self.set_upstreams(config.upstreams)

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None:
            raise RuntimeError("the gateway has not started")
        return self._session

    def upstream_auth(self) -> CIMultiDict[str]:
        """Headers for the gateway's own calls to the upstream (tokenize, discovery)."""
        return up.request_headers({}, self.config.upstream_api_key, keep_authorization=False)

    def set_upstreams(self, specs: tuple[UpstreamSpec, ...]) -> None:
        """The configured upstreams plus `specs`; a replica whose spec is unchanged keeps its
        state (health, queues, in-flight requests)."""
        wanted = {s.name: s for s in (*self.config.upstreams, *specs)}
        # The joining replicas are built before anything changes: one that cannot be built
        # leaves the gateway as it was, not half-applied.
        joining = {name: Replica(spec, self.metrics, self.config.routing,
                                 self.config.upstream_connect_timeout_s)
                   for name, spec in wanted.items()
                   if name not in self.replicas or self.replicas[name].spec != spec}
        for name in [n for n, r in self.replicas.items() if wanted.get(n) != r.spec]:
            log.info("upstream %s leaves the gateway", name)
            self.replicas.pop(name).pool.close()  # idle connections; requests in flight finish
        for name, replica in joining.items():
            log.info("upstream %s (%s) joins the gateway", name, replica.url)
            self.replicas[name] = replica
        self.refresh()

    def refresh(self) -> None:
        """After a replica joined, left or told what it serves."""
        self.router.update(list(self.replicas.values()))
        if self.config.locality.block_size is None:
            sizes = [r.block_size for r in self.replicas.values() if r.block_size]
            if sizes:
                self.watch.block_size = sizes[0]

    async def start(self) -> None:
        self._session = up.new_session(self.config.upstream_connect_timeout_s)
        self._tasks.append(asyncio.create_task(self.monitor.run()))
        self._tasks.append(asyncio.create_task(self.stalls.run()))
        self._tasks.append(asyncio.create_task(
            self.sessions.gate.run(lambda: list(self.replicas.values()))))
        if self.config.registry is not None:
            self._tasks.append(asyncio.create_task(
                registry.watch(self.config.registry, self.set_upstreams, self._registry_read)))

    def _registry_read(self, verdict: registry.Verdict) -> None:
        self.registry_verdict = verdict

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        self.stalls.stop()
        await self.watch.close()
        for replica in self.replicas.values():
            replica.pool.close()
        if self._session is not None:
            await self._session.close()
        self.bodies.close()

    async def learn_all(self) -> None:
        """Ask every replica that has not yet said what it serves (for /v1/models)."""
        await asyncio.gather(*(self.monitor.learn(r) for r in self.replicas.values()
                               if not r.discovered))

    async def _tokenize_ids(self, body: dict[str, Any]) -> list[int]:
        replica = self.any_replica(body.get("model"))
        result = await tokenize(self.session, replica.url, body, self.upstream_auth())
        return result.tokens

    def any_replica(self, model: object) -> Replica:
        """A replica for the gateway's own calls about `model` (tokenize): a healthy one."""
        try:
            pool = self.router.pool(model)
        except NoRoute:
            pool = list(self.replicas.values())
        if not pool:
            raise Sm121Error("the gateway has no upstream", "add one with --upstream")
        return next((r for r in pool if r.healthy), pool[0])

    def _locality_result(self, session: str, result: Divergence, early: bool,
                         warned: bool) -> None:
        self.metrics.reuse.labels(session).set(result.reusable_fraction)
        self.metrics.reuse_all.observe(result.reusable_fraction)
        if early:
            self.metrics.early.inc()
        if warned:
            self.metrics.locality_warnings.inc()

    def _forget_session(self, session: str) -> None:
        with contextlib.suppress(KeyError):  # a session evicted before its first comparison
            self.metrics.reuse.remove(session)
