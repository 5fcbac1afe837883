"""Single key presses from a terminal without Enter (cbreak mode), restored on exit."""

from __future__ import annotations

import os
import select
import sys
import termios
import tty
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def cbreak() -> Iterator[None]:
    fd = sys.stdin.fileno()
    saved = termios.tcgetattr(fd)
    try:
        tty.setcbreak(fd)
        yield
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


def read_key(timeout_s: float) -> str | None:
    """A key pressed within timeout_s, or None."""
    ready, _, _ = select.select([sys.stdin], [], [], max(timeout_s, 0.0))
    if not ready:
        return None
    return os.read(sys.stdin.fileno(), 1).decode(errors="replace")
