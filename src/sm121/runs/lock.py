"""An exclusive lock beside a file, across processes and threads (flock on a file of its own),
for writers that read a file, change it and write it back: under the lock none of them
drops another's change."""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold `.NAME.lock` beside PATH. Each call opens it anew, so two threads of one process
    exclude each other as two processes do (flock belongs to the open file)."""
    with open(path.with_name(f".{path.name}.lock"), "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
