"""Sample every target once per interval: scrape each /metrics, turn the change since the
previous scrape into panels, and add the hosts. One call of `sample()` is one JSON object.

Remote hosts are probed in a background thread at their own, slower period, so a slow SSH
round trip never stretches the interval; their row carries its age."""

from __future__ import annotations

import time
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

from sm121.engines.engine_error import EngineError
from sm121.engines.metrics_snapshot import Snapshot, scrape
from sm121.hosts.host_panel import local_host, remote_host
from sm121.hosts.transport import transport_for
from sm121.monitor.engine import engine_panel
from sm121.monitor.gateway import gateway_panel, is_gateway
from sm121.monitor.targets import NodeRef, Target, distinct_nodes


class Sampler:
    def __init__(self, targets: list[Target], remote_period_s: float = 15.0) -> None:
        self.targets = targets
        self.nodes = distinct_nodes(targets)
        self.remote_period_s = remote_period_s
        self._previous: dict[str, Snapshot] = {}
        self._remote: dict[str, dict[str, Any]] = {}
        self._pending: dict[str, Future[dict[str, Any]]] = {}
        self._asked: dict[str, float] = {}
        self._pool = ThreadPoolExecutor(max_workers=4) if any(n.ssh for n in self.nodes) else None

    def prime(self) -> None:
        """The first scrape, so the first sample has an interval to compare against."""
        for target in self.targets:
            for url in target.urls:
                try:
                    self._previous[url] = scrape(url)
                except EngineError:
                    continue
        self._ask_remote()

    def sample(self) -> dict[str, Any]:
        return {"time": datetime.now(UTC).isoformat(timespec="seconds"),
                "targets": [self._target(t) for t in self.targets],
                "hosts": [self._host(n) for n in self.nodes]}

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)

    def _target(self, target: Target) -> dict[str, Any]:
        row: dict[str, Any] = {"name": target.name, "run_id": target.run_id, "engine": None,
                               "gateway": None, "errors": []}
        for url in target.urls:
            try:
                now = scrape(url)
            except EngineError as exc:
                row["errors"].append(exc.message)
                continue
            before = self._previous.get(url) or now
            self._previous[url] = now
            if is_gateway(now):
                row["gateway"] = gateway_panel(before, now) | {"url": url}
            else:
                row["engine"] = engine_panel(before, now) | {"url": url}
        return row

    def _host(self, node: NodeRef) -> dict[str, Any]:
        if node.ssh is None:
            return local_host(node.name) | {"age_s": 0.0}
        self._ask_remote()
        key = node.ssh + node.name
        if key in self._pending and self._pending[key].done():
            self._remote[key] = self._pending.pop(key).result() | {"at": time.monotonic()}
        last = self._remote.get(key)
        if last is None:
            return {"node": node.name, "error": None, "pending": True}
        return {k: v for k, v in last.items() if k != "at"} | {
            "age_s": round(time.monotonic() - last["at"], 1)}

    def _ask_remote(self) -> None:
        if self._pool is None:
            return
        now = time.monotonic()
        for node in self.nodes:
            if node.ssh is None:
                continue
            key = node.ssh + node.name
            if key in self._pending or now - self._asked.get(key, -1e9) < self.remote_period_s:
                continue
            self._asked[key] = now
            transport = transport_for(node.ssh, node.ssh_port, node.ssh_config, name=node.name)
            self._pending[key] = self._pool.submit(remote_host, node.name, transport)

