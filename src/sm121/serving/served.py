"""served(plan, mode): one serve held for a block and always stopped, Ctrl-C and errors
included. What `bench ab`, `bench knee --recipe` and `tune` measure on."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sm121.plan.model import ServePlan
from sm121.progress import Progress, quiet
from sm121.serving.serve import Mode, ServedRun, serve


@contextmanager
def served(plan: ServePlan, mode: Mode, progress: Progress = quiet,
           trust: bool = False) -> Iterator[ServedRun]:
    """Serve `plan` in `mode` until the block ends, then stop every process the run holds
    (the engine on each node, its watchdog, a gateway started in front of it) and wait for
    the local engine. A serve that fails has stopped what it started before it raises."""
    run = serve(plan, mode, progress=progress, trust=trust)
    try:
        yield run
    finally:
        run.stop()
