"""Progress of the copies: each receiving folder's size polled over the node's transport
(`du -sb`, the same for rsync and tar), or the byte count of an image stream, turned into
bytes, rate and ETA per node and in total."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from sm121.errors import Sm121Error
from sm121.hosts.transport import Transport


@dataclass(frozen=True)
class NodeProgress:
    node: str
    sender: str
    done_bytes: int
    total_bytes: int
    rate_bps: float  # bytes per second over the last interval
    eta_s: float | None


@dataclass(frozen=True)
class Snapshot:
    nodes: tuple[NodeProgress, ...]
    done_bytes: int
    total_bytes: int
    rate_bps: float
    eta_s: float | None
    elapsed_s: float


@dataclass
class _Watched:
    sender: str
    measure: Callable[[], int]  # bytes there now
    total: int
    last: tuple[float, int] | None = None
    rate: float = 0.0
    done: int = 0
    finished: bool = False


def eta(remaining: int, rate: float) -> float | None:
    return remaining / rate if rate > 0 else None


@dataclass
class ProgressBoard:
    """The copies in flight and done; `poll()` measures them, a thread calls it on a beat."""

    total_bytes: int
    report: Callable[[Snapshot], None]
    interval_s: float = 2.0
    _nodes: dict[str, _Watched] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _started: float = field(default_factory=time.monotonic)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def watch(self, node: str, sender: str, measure: Callable[[], int], total: int) -> None:
        with self._lock:
            self._nodes[node] = _Watched(sender, measure, total)

    def watch_folder(self, node: str, sender: str, transport: Transport, folder: str,
                     total: int) -> None:
        self.watch(node, sender, lambda: folder_bytes(transport, folder), total)

    def finish(self, node: str) -> None:
        with self._lock:
            watched = self._nodes.get(node)
            if watched:
                watched.done, watched.finished = watched.total, True

    def poll(self) -> Snapshot:
        with self._lock:
            active = [w for w in self._nodes.values() if not w.finished]
        for watched in active:
            size = watched.measure()
            now = time.monotonic()
            with self._lock:
                if watched.last is not None and now > watched.last[0]:
                    step = max(0, size - watched.last[1]) / (now - watched.last[0])
                    watched.rate = step if watched.rate == 0 else 0.5 * watched.rate + 0.5 * step
                watched.last = (now, size)
                if not watched.finished:
                    watched.done = min(size, watched.total)
        return self.snapshot()

    def snapshot(self) -> Snapshot:
        with self._lock:
            nodes = tuple(NodeProgress(n, w.sender, w.done, w.total,
                                       0.0 if w.finished else w.rate,
                                       0.0 if w.finished else eta(w.total - w.done, w.rate))
                          for n, w in self._nodes.items())
        done = sum(n.done_bytes for n in nodes)
        rate = sum(n.rate_bps for n in nodes)
        return Snapshot(nodes, done, self.total_bytes, rate,
                        eta(self.total_bytes - done, rate), time.monotonic() - self._started)

    def __enter__(self) -> ProgressBoard:
        self._thread = threading.Thread(target=self._beat, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=30)
        self.report(self.snapshot())

    def _beat(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.report(self.poll())
            except Sm121Error:
                continue  # a node that cannot be measured now is measured at the next beat


def folder_bytes(transport: Transport, folder: str) -> int:
    done = transport.run(["sh", "-c", 'du -sb "$1" 2>/dev/null | cut -f1', "du", folder],
                         timeout=60)
    text = done.stdout.strip()
    return int(text) if text.isdigit() else 0
