"""Work on every node at once (ssh commands are mostly waiting), with the first error
raised only after all of them finished: no node is left half-done behind an early raise."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")


def in_parallel(items: Sequence[T], work: Callable[[T], R]) -> list[R]:
    """work(item) for every item at once; the first exception is raised after all finished."""
    if len(items) <= 1:
        return [work(item) for item in items]
    with ThreadPoolExecutor(max_workers=len(items)) as pool:
        futures = [pool.submit(work, item) for item in items]
        errors = [f.exception() for f in futures if f.exception() is not None]
        if errors:
            raise errors[0]  # type: ignore[misc]
        return [f.result() for f in futures]
