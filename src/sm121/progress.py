"""The one shape of progress that long work reports to whoever shows it (the CLI's LongWait,
a prefixing wrapper, or nothing): a step, `progress("loading weights")`, or counted work,
`progress("probe", 3, 10)`. The library never draws; the caller decides how it looks.

`Say` is the plainer shape, one line of news at a time (a boot's phases, tune's steps): what
a caller that prints lines hands to the long work it starts."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

Say = Callable[[str], None]


class Progress(Protocol):
    def __call__(self, what: str, done: float | None = None, total: float | None = None, /
                 ) -> None:
        """A step when total is None, else `done` of `total` units of work."""


def quiet(what: str, done: float | None = None, total: float | None = None, /) -> None:
    """Progress that nobody watches."""
