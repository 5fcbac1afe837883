"""The fair gate: a cap, round-robin across keys, cancellation that leaks no slot."""

from __future__ import annotations

import asyncio

from sm121.gateway.fair_gate import FairGate


async def _served_order(gate: FairGate, requests: list[str]) -> list[str]:
    order: list[str] = []

    async def one(key: str) -> None:
        await gate.acquire(key)
        order.append(key)
        await asyncio.sleep(0)
        gate.release(key)

    tasks = []
    for key in requests:
        tasks.append(asyncio.create_task(one(key)))
        await asyncio.sleep(0)  # queue them in this order
    await asyncio.gather(*tasks)
    return order


async def test_waiters_are_served_round_robin_across_keys() -> None:
    gate = FairGate(1)
    await gate.acquire("hog")  # hold the only slot while everybody queues
    served = asyncio.create_task(_served_order(gate, ["a"] * 4 + ["b", "c"]))
    await asyncio.sleep(0.01)
    gate.release("hog")
    order = await served
    assert order[:3] == ["a", "b", "c"]  # b and c do not wait behind all of a's requests


async def test_cap_is_never_exceeded() -> None:
    gate = FairGate(3)
    peak = 0

    async def one(key: str) -> None:
        nonlocal peak
        await gate.acquire(key)
        peak = max(peak, gate.held)
        await asyncio.sleep(0.001)
        gate.release(key)

    await asyncio.gather(*(one(f"k{i % 4}") for i in range(40)))
    assert peak == 3 and gate.held == 0 and gate.waiting == 0


async def test_per_key_cap_lets_other_keys_through() -> None:
    gate = FairGate(4, per_key=1)
    await gate.acquire("a")
    blocked = asyncio.create_task(gate.acquire("a"))
    await asyncio.sleep(0.01)
    assert not blocked.done()
    await asyncio.wait_for(gate.acquire("b"), timeout=1)  # another key is not held back
    gate.release("a")
    await asyncio.wait_for(blocked, timeout=1)


async def test_cancelled_waiter_leaves_the_queue() -> None:
    gate = FairGate(1)
    await gate.acquire("a")
    waiter = asyncio.create_task(gate.acquire("b"))
    await asyncio.sleep(0.01)
    waiter.cancel()
    await asyncio.gather(waiter, return_exceptions=True)
    assert gate.waiting == 0
    gate.release("a")
    assert gate.held == 0
