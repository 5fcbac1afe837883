"""Who sends to whom: every node in parallel, as a tree. The source sends at most
`source_copies` full copies over the network (two: the head's link is not split further);
every node that holds a verified copy then serves one more node at a time, so the copies
double each round instead of all coming from the head."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass

from sm121.stage.job import stop_all


@dataclass(frozen=True)
class Copy:
    sender: str
    target: str
    ok: bool
    error: str = ""


Send = Callable[[str, str], None]  # raises on failure


def fan_out(source: str, targets: list[str], send: Send, source_copies: int = 2,
            ready: list[str] | None = None) -> list[Copy]:
    """Run send(sender, target) for every target; the source's own copy (when it is a target
    too) is local and does not count against its network copies. `ready`: nodes that already
    hold a verified copy, senders from the start."""
    with ThreadPoolExecutor(max_workers=max(2, len(targets) + 1)) as pool:
        try:
            return _schedule(pool, source, targets, send, source_copies, ready)
        except BaseException:
            # Ctrl-C or SIGTERM: stop the copies in flight before the pool waits for them.
            stop_all()
            raise


def _schedule(pool: ThreadPoolExecutor, source: str, targets: list[str], send: Send,
              source_copies: int, ready: list[str] | None) -> list[Copy]:
    pending = [t for t in targets if t != source]
    senders = [source, *(ready or [])]
    in_flight: dict[str, int] = {}
    sent = 0  # the source's network copies, done or under way
    copies: list[Copy] = []
    futures: dict[Future[None], tuple[str, str]] = {}

    def start(sender: str, target: str) -> None:
        in_flight[sender] = in_flight.get(sender, 0) + 1
        futures[pool.submit(send, sender, target)] = (sender, target)

    if source in targets:
        start(source, source)
    while pending or futures:
        # Nodes that received a copy serve first: the source's copies are kept for when
        # no one else can send.
        for sender in [s for s in senders if s != source] + [source]:
            while pending and _free(sender, source, in_flight, sent, source_copies):
                if sender == source:
                    sent += 1
                start(sender, pending.pop(0))
        if not futures:
            copies += [Copy(source, t, False, "no node holding a copy was left to send it")
                       for t in pending]
            break
        finished, _ = wait(futures, return_when=FIRST_COMPLETED)
        for future in finished:
            sender, target = futures.pop(future)
            in_flight[sender] -= 1
            error = future.exception()
            copies.append(Copy(sender, target, error is None,
                               "" if error is None else str(error)))
            if error is not None and sender == source and target != source:
                sent -= 1  # a copy that failed is not a copy: the source may try again
            if error is None and target != source:
                senders.append(target)
    return copies


def _free(sender: str, source: str, in_flight: dict[str, int], sent: int, cap: int) -> bool:
    if sender == source:
        return sent < cap
    return in_flight.get(sender, 0) == 0
