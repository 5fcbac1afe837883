"""Session admission's state, pure: which sessions are active on which replica, who waits, who
went idle. No I/O and no clock of its own (every call is given `now`), so the rule is tested
as plain arithmetic.

The rule is the working-set rule of an operating system facing thrashing: an agent is idle
between its turns, yet its next turn reuses its prefix only if the engine kept it, so the KV
pool must hold every active session's working set (DOMAIN.md, "Agent capacity is a memory
question first"). A replica's `Budget` is its pool less a reserve (long jobs, turns in
flight); the active sessions' working sets must fit it. A turn of an active session always
passes. A new session is admitted on the candidate replica with the most headroom that fits
it, else it waits in a FIFO queue; a session idle past the idle bound leaves the active set
and frees its share. A session is never split: once active, it stays on its replica.

Units: with a pool, a session weighs its working set's blocks (memory/working_set.py, the
count the capacity model shares); with `--sessions N`, every session weighs 1 and the budget
is N.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

from sm121.errors import Sm121Error
from sm121.memory.working_set import WorkingSet, blocks_for

IDLE_KEPT = 256  # idle sessions remembered for the report and their next entry's size


@dataclass(frozen=True)
class Budget:
    """What one replica's active sessions may hold: blocks of a pool, or a session count."""

    capacity: int  # units the active set may hold (pool less reserve, or N sessions)
    block_size: int | None  # None: count mode, every session weighs one unit
    pool_blocks: int | None = None  # the whole pool, for the report
    reserve_blocks: int = 0  # what the reserve (or the long jobs, when larger) holds back

    def units(self, ws: WorkingSet) -> int:
        if self.block_size is None:
            return 1
        return max(1, ws.blocks(self.block_size))


@dataclass
class Active:
    session: str
    replica: str
    ws: WorkingSet
    since: float  # admitted at
    last_seen: float  # the end of its last turn (or its arrival, while one is in flight)
    inflight: int = 0


@dataclass
class Waiting:
    session: str
    ws: WorkingSet
    candidates: tuple[str, ...]  # the replicas that serve its model
    since: float
    requests: int = 1  # its requests held open (a client may send two at once)


@dataclass
class Idle:
    session: str
    replica: str
    ws: WorkingSet
    since: float  # when it left the active set


@dataclass
class SessionTable:
    idle_s: float
    max_waiting: int
    budgets: dict[str, Budget] = field(default_factory=dict)
    active: dict[str, Active] = field(default_factory=dict)
    waiting: OrderedDict[str, Waiting] = field(default_factory=OrderedDict)
    idle: OrderedDict[str, Idle] = field(default_factory=OrderedDict)

    # ---- budgets -----------------------------------------------------------------------

    def used(self, replica: str) -> int:
        budget = self.budgets.get(replica)
        if budget is None:
            return 0
        return sum(budget.units(a.ws) for a in self.active.values() if a.replica == replica)

    def headroom(self, replica: str) -> int:
        budget = self.budgets.get(replica)
        return -1 if budget is None else budget.capacity - self.used(replica)

    def fits(self, replica: str, ws: WorkingSet) -> bool:
        """Its working set fits the headroom, or the replica has no active session at all (a
        session bigger than the whole budget is served alone rather than never)."""
        budget = self.budgets.get(replica)
        if budget is None:
            return False
        if not any(a.replica == replica for a in self.active.values()):
            return True
        return budget.units(ws) <= self.headroom(replica)

    # ---- the request path --------------------------------------------------------------

    def turn(self, session: str, now: float) -> str | None:
        """A turn of an active session: it passes; its replica. None: not active."""
        entry = self.active.get(session)
        if entry is None:
            return None
        entry.inflight += 1
        entry.last_seen = now
        return entry.replica

    def arrive(self, session: str, ws: WorkingSet, candidates: tuple[str, ...],
               now: float) -> str | None:
        """A request of a session that is not active: admitted at once (its replica, and its
        turn counted in flight), or queued behind the earlier waiters (None). Raises
        QueueFull when the queue is at its bound."""
        queued = self.waiting.get(session)
        if queued is not None:
            queued.requests += 1
            queued.ws = ws
            return None
        if not self._blocked(candidates):
            replica = self._best(ws, candidates)
            if replica is not None:
                self._admit(session, replica, ws, now)
                return self.turn(session, now)
        if len(self.waiting) >= self.max_waiting:
            raise QueueFull(len(self.waiting))
        self.waiting[session] = Waiting(session, ws, candidates, now)
        return None

    def adopt(self, session: str, replica: str, ws: WorkingSet, now: float) -> None:
        """Made active without a check (admission was not on yet), its turn in flight."""
        self.waiting.pop(session, None)
        self._admit(session, replica, ws, now)
        self.turn(session, now)

    def _blocked(self, candidates: tuple[str, ...]) -> bool:
        """Someone earlier waits for one of these replicas: FIFO, no overtaking."""
        return any(set(w.candidates) & set(candidates) for w in self.waiting.values())

    def _best(self, ws: WorkingSet, candidates: tuple[str, ...],
              blocked: frozenset[str] = frozenset()) -> str | None:
        """The candidate with the most headroom that fits `ws` (ties: the first listed)."""
        fitting = [r for r in candidates if r not in blocked and self.fits(r, ws)]
        return max(fitting, key=self.headroom, default=None)

    def _admit(self, session: str, replica: str, ws: WorkingSet, now: float) -> None:
        self.idle.pop(session, None)
        self.active[session] = Active(session, replica, ws, since=now, last_seen=now)

    def leave_queue(self, session: str) -> bool:
        """One of a waiting session's requests gave up (timed out, or its client went
        away); the session leaves the queue with its last one. True when it left."""
        queued = self.waiting.get(session)
        if queued is None:
            return False
        queued.requests -= 1
        if queued.requests > 0:
            return False
        del self.waiting[session]
        return True

    def turn_ended(self, session: str, now: float, ws: WorkingSet | None = None) -> None:
        """A turn finished; its idle time counts from here. `ws`: the session's working set
        as the turn showed it (its prompt and reply), when known."""
        entry = self.active.get(session)
        if entry is None:
            return
        entry.inflight = max(0, entry.inflight - 1)
        entry.last_seen = now
        if ws is not None:
            entry.ws = ws

    def resize(self, session: str, ws: WorkingSet) -> None:
        """An active session's working set as its newest turn shows it: it always passes,
        even when that grows it past the headroom (new sessions then wait longer)."""
        entry = self.active.get(session)
        if entry is not None:
            entry.ws = ws

    def move(self, session: str, replica: str) -> None:
        """Its replica left the rotation: the session goes on `replica` (a session is never
        split, so all of it moves)."""
        entry = self.active.get(session)
        if entry is not None:
            entry.replica = replica

    # ---- time ----------------------------------------------------------------------------

    def expire(self, now: float) -> list[str]:
        """Sessions idle (no turn in flight) past the idle bound leave the active set."""
        gone = [a for a in self.active.values()
                if a.inflight == 0 and now - a.last_seen > self.idle_s]
        for entry in gone:
            del self.active[entry.session]
            self.idle[entry.session] = Idle(entry.session, entry.replica, entry.ws, now)
            self.idle.move_to_end(entry.session)
        while len(self.idle) > IDLE_KEPT:
            self.idle.popitem(last=False)
        return [a.session for a in gone]

    def admit_waiting(self, now: float) -> list[tuple[str, str, int]]:
        """Admit the waiters that fit, in queue order: a waiter that cannot be admitted
        blocks its replicas for those behind it. (session, replica, its requests)."""
        admitted: list[tuple[str, str, int]] = []
        blocked: set[str] = set()
        for waiter in list(self.waiting.values()):
            replica = self._best(waiter.ws, waiter.candidates, frozenset(blocked))
            if replica is None:
                blocked.update(waiter.candidates)
                continue
            del self.waiting[waiter.session]
            self._admit(waiter.session, replica, waiter.ws, now)
            self.active[waiter.session].inflight = waiter.requests
            admitted.append((waiter.session, replica, waiter.requests))
        return admitted

    def next_idle_at(self) -> float | None:
        """When the earliest active session with no turn in flight would go idle."""
        times = [a.last_seen + self.idle_s for a in self.active.values() if a.inflight == 0]
        return min(times, default=None)

    def known_size(self, session: str) -> WorkingSet | None:
        """The working set an active or recently idle session last showed."""
        entry = self.active.get(session) or self.idle.get(session)
        return entry.ws if entry is not None else None


class QueueFull(Sm121Error):
    def __init__(self, waiting: int) -> None:
        super().__init__(f"{waiting} sessions already wait")
        self.waiting = waiting


def budget_of(pool_blocks: int, block_size: int, reserve_fraction: float,
              long_tokens: int = 0) -> Budget:
    """A replica's budget from its pool: the pool less the larger of the reserve and what
    the long-prompt lane's jobs in flight hold (they count against the reserve, not the
    sessions, until they outgrow it)."""
    reserve = max(round(pool_blocks * reserve_fraction), blocks_for(long_tokens, block_size))
    return Budget(capacity=max(0, pool_blocks - reserve), block_size=block_size,
                  pool_blocks=pool_blocks, reserve_blocks=reserve)


SESSION_MODES = ("auto", "off")


@dataclass(frozen=True)
class SessionSettings:
    """`--sessions auto|off|N`, `--session-wait`, `--session-idle` (docs/sessions.md)."""

    mode: str = "auto"  # auto: on where every replica reports its KV pool; off; or N sessions
    wait_s: float = 120.0  # a new session's request is held this long, then told to retry
    idle_s: float = 300.0  # longer than an agent's tool step: a session idle past it leaves
    reserve: float = 0.1  # share of the pool kept for long jobs and turns in flight
    max_waiting: int = 1024  # sessions in the queue; past it a new one is told to retry at once

    def __post_init__(self) -> None:
        if self.mode not in SESSION_MODES and not (self.mode.isdigit() and int(self.mode) > 0):
            raise Sm121Error(f"--sessions {self.mode!r} is neither auto, off nor a count",
                             "auto: admit by the KV pool's room; off; N: N sessions per replica")
        if self.wait_s < 0 or self.idle_s <= 0 or not 0 <= self.reserve < 1 \
                or self.max_waiting < 1:
            raise Sm121Error("--session-wait must be >= 0, --session-idle > 0, the reserve in "
                             "[0, 1) and the queue bound at least 1",
                             "defaults: --session-wait 120 --session-idle 300")

    @property
    def count(self) -> int | None:
        """N of `--sessions N`; None in auto and off."""
        return int(self.mode) if self.mode.isdigit() else None
