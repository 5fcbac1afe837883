"""The running gateway's state: settings, metrics, admission, the upstream session, the
locality watch and the capture, with their start-up and shutdown."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

import aiohttp
from multidict import CIMultiDict

from sm121.gateway import upstream as up
from sm121.gateway.admission import Admission
from sm121.gateway.capture import Capture
from sm121.gateway.config import GatewayConfig
from sm121.gateway.metrics import GatewayMetrics
from sm121.locality.divergence import Divergence
from sm121.locality.tokenize import tokenize
from sm121.locality.watch import LocalityWatch, WatchLimits

log = logging.getLogger("sm121.gateway")
VLLM_DEFAULT_BLOCK_SIZE = 16  # used until the upstream tells its own
_DISCOVERY_RETRY_S = 5.0


class Gateway:
    def __init__(self, config: GatewayConfig) -> None:
        self.config = config
        self.metrics = GatewayMetrics()
        self.admission = Admission(config.max_inflight, config.max_inflight_per_session,
                                   config.long_lane, self.metrics)
        self.capture = (Capture(config.capture.directory, config.capture.redact,
                                on_failure=self.metrics.capture_failures.inc)
                        if config.capture.directory else None)
        self.max_model_len = config.max_model_len
        self._session: aiohttp.ClientSession | None = None
        self._discovery: asyncio.Task[None] | None = None
        settings = config.locality
        self.watch = LocalityWatch(
            self._tokenize_ids, settings.block_size or VLLM_DEFAULT_BLOCK_SIZE,
            WatchLimits(early_fraction=settings.early_fraction, warn_after=settings.warn_after,
                        max_sessions=settings.max_sessions, max_pending=settings.max_pending),
            on_result=self._locality_result,
            on_skip=lambda reason: self.metrics.locality_skipped.labels(reason).inc(),
            on_evict=self._forget_session,
        )

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None:
            raise RuntimeError("the gateway has not started")
        return self._session

    def upstream_auth(self) -> CIMultiDict[str]:
        """Headers for the gateway's own calls to the upstream (tokenize, discovery)."""
        return up.request_headers({}, self.config.upstream_api_key, keep_authorization=False)

    async def start(self) -> None:
        self._session = up.new_session(self.config.upstream_connect_timeout_s)
        self._discovery = asyncio.create_task(self._discover())

    async def stop(self) -> None:
        if self._discovery is not None:
            self._discovery.cancel()
        await self.watch.close()
        if self._session is not None:
            await self._session.close()

    async def _discover(self) -> None:
        """Ask the upstream for its context length and block size until it answers; an
        upstream that is still booting must not stop the gateway from starting."""
        want_len = self.config.max_model_len is None
        want_block = self.config.locality.block_size is None
        while want_len or want_block:
            facts = await up.discover(self.session, self.config.upstream, self.upstream_auth())
            if want_len and facts.max_model_len is not None:
                self.max_model_len, want_len = facts.max_model_len, False
            if want_block and facts.block_size is not None:
                self.watch.block_size, want_block = facts.block_size, False
            if facts.max_model_len is not None:
                # The API answers; a block size it did not report will not appear later.
                want_block = False
            if want_len or want_block:
                await asyncio.sleep(_DISCOVERY_RETRY_S)
        log.info("upstream facts: max_model_len %s, block size %s", self.max_model_len,
                 self.watch.block_size)

    async def _tokenize_ids(self, body: dict[str, Any]) -> list[int]:
        result = await tokenize(self.session, self.config.upstream, body, self.upstream_auth())
        return result.tokens

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
