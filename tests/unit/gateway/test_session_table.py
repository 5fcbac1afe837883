"""Session admission's rule as plain arithmetic: working sets against a budget, the FIFO queue,
idleness, replicas by headroom. Every call is given its time."""

from __future__ import annotations

import pytest

from sm121.errors import Sm121Error
from sm121.gateway.session_table import (
    Budget,
    QueueFull,
    SessionSettings,
    SessionTable,
    budget_of,
)
from sm121.memory.working_set import WorkingSet

BLOCK = 16


def table(capacity: int = 100, replicas: tuple[str, ...] = ("r0",), idle_s: float = 10.0,
          max_waiting: int = 8) -> SessionTable:
    t = SessionTable(idle_s=idle_s, max_waiting=max_waiting)
    for name in replicas:
        t.budgets[name] = Budget(capacity=capacity, block_size=BLOCK)
    return t


def ws(blocks: int) -> WorkingSet:
    return WorkingSet(prompt_tokens=blocks * BLOCK - 8, growth_tokens=8)  # exactly `blocks`


def test_sessions_that_fit_are_admitted_and_the_next_waits() -> None:
    t = table(capacity=100)
    for i in range(4):
        assert t.arrive(f"s{i}", ws(25), ("r0",), now=0.0) == "r0"
    assert t.used("r0") == 100
    assert t.arrive("s4", ws(25), ("r0",), now=1.0) is None
    assert list(t.waiting) == ["s4"]


def test_a_turn_of_an_active_session_always_passes_even_over_budget() -> None:
    t = table(capacity=50)
    assert t.arrive("a", ws(40), ("r0",), 0.0) == "r0"
    assert t.arrive("b", ws(20), ("r0",), 0.0) is None  # waits
    t.turn_ended("a", 1.0)
    t.resize("a", ws(80))  # grew past the budget: still active, still passes
    assert t.turn("a", 2.0) == "r0"
    assert t.headroom("r0") < 0
    assert t.admit_waiting(2.0) == []  # the newcomer waits longer


def test_a_session_bigger_than_the_budget_is_served_alone() -> None:
    t = table(capacity=10)
    assert t.arrive("huge", ws(50), ("r0",), 0.0) == "r0"
    assert t.arrive("small", ws(1), ("r0",), 0.0) is None


def test_fifo_no_overtaking_on_the_same_replica() -> None:
    t = table(capacity=100)
    t.arrive("a", ws(90), ("r0",), 0.0)
    assert t.arrive("big", ws(50), ("r0",), 1.0) is None
    # 10 blocks are free, enough for a small one, but it must not overtake `big`.
    assert t.arrive("small", ws(5), ("r0",), 2.0) is None
    assert list(t.waiting) == ["big", "small"]
    t.turn_ended("a", 3.0)
    t.expire(20.0)
    assert t.admit_waiting(20.0) == [("big", "r0", 1), ("small", "r0", 1)]


def test_a_waiter_for_another_replica_is_not_blocked() -> None:
    t = table(capacity=10, replicas=("r0", "r1"))
    t.arrive("a", ws(10), ("r0",), 0.0)
    assert t.arrive("b", ws(10), ("r0",), 0.0) is None
    assert t.arrive("c", ws(5), ("r1",), 0.0) == "r1"  # another model's replica


def test_idle_sessions_leave_and_waiters_take_their_room() -> None:
    t = table(capacity=50, idle_s=10.0)
    t.arrive("a", ws(50), ("r0",), 0.0)
    t.turn_ended("a", 1.0)
    t.arrive("b", ws(50), ("r0",), 2.0)
    assert t.expire(10.9) == []  # idle 9.9 s: still active
    assert t.expire(11.5) == ["a"]
    assert "a" in t.idle and "a" not in t.active
    assert t.admit_waiting(11.5) == [("b", "r0", 1)]
    assert t.known_size("a") == ws(50)  # remembered for its next entry


def test_a_session_with_a_turn_in_flight_never_goes_idle() -> None:
    t = table(idle_s=1.0)
    t.arrive("a", ws(1), ("r0",), 0.0)  # its first turn is in flight
    assert t.expire(100.0) == []
    t.turn_ended("a", 100.0)
    assert t.expire(101.5) == ["a"]


def test_an_idle_session_returns_through_the_queue() -> None:
    t = table(capacity=10, idle_s=1.0)
    t.arrive("a", ws(10), ("r0",), 0.0)
    t.turn_ended("a", 0.0)
    t.expire(2.0)
    t.arrive("b", ws(10), ("r0",), 2.0)
    assert t.turn("a", 3.0) is None  # not active any more
    assert t.arrive("a", ws(10), ("r0",), 3.0) is None  # waits behind b


def test_new_session_goes_to_the_replica_with_most_headroom() -> None:
    t = table(capacity=100, replicas=("r0", "r1"))
    assert t.arrive("a", ws(60), ("r0", "r1"), 0.0) == "r0"  # tie: the first
    assert t.arrive("b", ws(10), ("r0", "r1"), 0.0) == "r1"  # 100 free beats 40
    assert t.arrive("c", ws(50), ("r0", "r1"), 0.0) == "r1"  # r1 has 90, r0 40
    assert t.turn("a", 1.0) == "r0" and t.turn("c", 1.0) == "r1"  # affinity: never split


def test_two_requests_of_one_waiting_session_are_admitted_together() -> None:
    t = table(capacity=10)
    t.arrive("a", ws(10), ("r0",), 0.0)
    assert t.arrive("b", ws(5), ("r0",), 1.0) is None
    assert t.arrive("b", ws(5), ("r0",), 1.5) is None
    assert t.waiting["b"].requests == 2
    t.turn_ended("a", 2.0)
    t.expire(20.0)
    assert t.admit_waiting(20.0) == [("b", "r0", 2)]
    assert t.active["b"].inflight == 2


def test_leaving_the_queue_needs_every_request_to_leave() -> None:
    t = table(capacity=1)
    t.arrive("a", ws(1), ("r0",), 0.0)
    t.arrive("b", ws(1), ("r0",), 0.0)
    t.arrive("b", ws(1), ("r0",), 0.0)
    assert not t.leave_queue("b")
    assert t.leave_queue("b")
    assert not t.waiting


def test_the_queue_is_bounded() -> None:
    t = table(capacity=1, max_waiting=2)
    t.arrive("a", ws(1), ("r0",), 0.0)
    t.arrive("b", ws(1), ("r0",), 0.0)
    t.arrive("c", ws(1), ("r0",), 0.0)
    with pytest.raises(QueueFull):
        t.arrive("d", ws(1), ("r0",), 0.0)


def test_count_mode_weighs_every_session_one() -> None:
    t = SessionTable(idle_s=10.0, max_waiting=8)
    t.budgets["r0"] = Budget(capacity=2, block_size=None)
    assert t.arrive("a", ws(1000), ("r0",), 0.0) == "r0"
    assert t.arrive("b", ws(1), ("r0",), 0.0) == "r0"
    assert t.arrive("c", ws(1), ("r0",), 0.0) is None


def test_budget_less_reserve_and_long_jobs_count_against_the_reserve() -> None:
    b = budget_of(pool_blocks=1000, block_size=16, reserve_fraction=0.1)
    assert (b.capacity, b.reserve_blocks) == (900, 100)
    # A long job within the reserve takes nothing from the sessions ...
    assert budget_of(1000, 16, 0.1, long_tokens=50 * 16).capacity == 900
    # ... past it, the budget shrinks by the excess.
    assert budget_of(1000, 16, 0.1, long_tokens=300 * 16).capacity == 700


def test_settings_are_checked() -> None:
    assert SessionSettings(mode="4").count == 4
    assert SessionSettings().count is None
    for bad in ("0", "-1", "some", ""):
        with pytest.raises(Sm121Error):
            SessionSettings(mode=bad)
    with pytest.raises(Sm121Error):
        SessionSettings(idle_s=0)


# ---- the gate on the event loop, with a clock the test moves ---------------------------------

class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class _Replica:
    """What the gate reads of a replica."""

    def __init__(self, name: str, pool_blocks: int | None = 100) -> None:
        self.name, self.healthy = name, True
        self.pool_blocks, self.block_size = pool_blocks, BLOCK
        self.pool_source: str | None = None


async def test_gate_holds_a_session_until_an_active_one_goes_idle() -> None:
    import asyncio

    from prometheus_client import CollectorRegistry

    from sm121.gateway.session_gate import SessionGate

    clock = _Clock()
    gate = SessionGate(SessionSettings(wait_s=30.0, idle_s=10.0, reserve=0.0),
                       CollectorRegistry(), clock=clock)
    pool = [_Replica("r0")]
    assert gate.on_for(pool)  # type: ignore[arg-type]
    assert (await gate.enter("a", ws(80), pool))[0].name == "r0"  # type: ignore[arg-type]
    gate.turn_done("a", None)
    waiting = asyncio.create_task(gate.enter("b", ws(80), pool))  # type: ignore[arg-type]
    await asyncio.sleep(0.01)
    assert not waiting.done()
    assert gate.retry_after() == 10  # a goes idle 10 s after its turn ended
    clock.now = 9.0
    gate.pump()
    await asyncio.sleep(0.01)
    assert not waiting.done() and gate.retry_after() == 1
    clock.now = 10.5
    gate.pump()
    home, waited = await asyncio.wait_for(waiting, 1.0)
    assert home.name == "r0" and waited == 10.5  # by the gate's clock
    report = gate.report(pool)  # type: ignore[arg-type]
    assert [a["session"] for a in report["active"]] == ["b"]
    assert [i["session"] for i in report["idle"]] == ["a"]


async def test_gate_is_off_in_auto_until_every_replica_reports_its_pool() -> None:
    from prometheus_client import CollectorRegistry

    from sm121.gateway.session_gate import SessionGate

    gate = SessionGate(SessionSettings(), CollectorRegistry(), clock=_Clock())
    on, why = gate.verdict([_Replica("r0"), _Replica("r1", pool_blocks=None)])  # type: ignore[list-item]
    assert not on and "r1" in why
    assert gate.verdict([_Replica("r0")])[0]  # type: ignore[list-item]
    counted = SessionGate(SessionSettings(mode="3"), CollectorRegistry(), clock=_Clock())
    assert counted.verdict([_Replica("r0", pool_blocks=None)])[0]  # type: ignore[list-item]
