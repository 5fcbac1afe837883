"""served(plan, mode): one serve held for a block and always stopped, Ctrl-C and errors
included; with `gateway_port`, a gateway in front of it as `serve --gateway` starts one, and
stopped with it. What `bench ab`, `bench knee --recipe` and `tune` measure on."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace

from sm121.plan.model import ServePlan
from sm121.progress import Progress, quiet
from sm121.runs.state import load_run
from sm121.serving.serve import Mode, ServedRun, serve


@contextmanager
def served(plan: ServePlan, mode: Mode, progress: Progress = quiet, trust: bool = False,
           gateway_port: int | None = None) -> Iterator[ServedRun]:
    """Serve `plan` in `mode` until the block ends, then stop every process of the run (the
    engine on each node, its watchdog, the gateway) and wait for the local engine."""
    run = serve(plan, mode, progress=progress, trust=trust)
    try:
        if gateway_port is not None:
            from sm121.serving.gateway_process import start_in_front

            start_in_front(run.info, plan, gateway_port, progress=progress)
            run = replace(run, info=load_run(run.run_id))  # with its gateway's URL
        yield run
    finally:
        run.stop()
