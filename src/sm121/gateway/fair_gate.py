"""A concurrency cap whose waiters are served round-robin across keys (clients or sessions).

A plain semaphore serves waiters first come, first served: one agent that fires twenty
requests would make every other agent wait behind all twenty. Here each key has its own
queue and a freed slot goes to the next key in turn.
"""

from __future__ import annotations

import asyncio
from collections import Counter, OrderedDict, deque


class FairGate:
    def __init__(self, capacity: int, per_key: int | None = None) -> None:
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self.capacity = capacity
        self.per_key = per_key
        self._held = 0
        self._held_by: Counter[str] = Counter()
        self._queues: OrderedDict[str, deque[asyncio.Future[None]]] = OrderedDict()

    @property
    def held(self) -> int:
        return self._held

    @property
    def waiting(self) -> int:
        return sum(len(q) for q in self._queues.values())

    async def acquire(self, key: str) -> None:
        # Every release grants to eligible waiters at once, so spare capacity means that
        # whoever still waits is held back by its own per-key cap: a newcomer may go ahead.
        if self._held < self.capacity and self._eligible(key):
            self._take(key)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._queues.setdefault(key, deque()).append(future)
        try:
            await future
        except asyncio.CancelledError:
            self._abandon(key, future)
            raise

    def release(self, key: str) -> None:
        self._held -= 1
        self._held_by[key] -= 1
        if self._held_by[key] <= 0:
            del self._held_by[key]
        self._grant()

    def _eligible(self, key: str) -> bool:
        return self.per_key is None or self._held_by[key] < self.per_key

    def _take(self, key: str) -> None:
        self._held += 1
        self._held_by[key] += 1

    def _grant(self) -> None:
        while self._held < self.capacity:
            key = next((k for k in self._queues if self._eligible(k)), None)
            if key is None:
                return
            queue = self._queues.pop(key)
            future = queue.popleft()
            if queue:
                self._queues[key] = queue  # back of the rotation: the next key goes first
            self._take(key)
            future.set_result(None)

    def _abandon(self, key: str, future: asyncio.Future[None]) -> None:
        """A waiter was cancelled (its client went away). If the slot had already been granted
        to it, hand the slot on; otherwise just leave the queue."""
        if future.done() and not future.cancelled():
            self.release(key)
            return
        queue = self._queues.get(key)
        if queue is not None and future in queue:
            queue.remove(future)
            if not queue:
                del self._queues[key]
