"""One engine boot through sm121's own launcher, held for as many measurements as the caller
makes on it, and always stopped: what `bench ab`, `bench knee --recipe` and `tune` share."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from sm121.launch.control import stop_run
from sm121.launch.local import serve_local
from sm121.plan.build import build_plan
from sm121.plan.model import ServePlan
from sm121.progress import Progress
from sm121.recipes.schema import ArgValue

Say = Callable[[str], None]


@dataclass(frozen=True)
class Boot:
    """A served engine: its plan (URL, model, engine args) and its run record."""

    plan: ServePlan
    run_id: str
    record: dict[str, Any]  # run id, engine args, boot-log facts, phase timings (JSON)


def steps(say: Say, prefix: str = "") -> Progress:
    """Progress as lines of `say` (steps only: the caller shows its own counts)."""
    def said(what: str, done: float | None = None, total: float | None = None, /) -> None:
        say(prefix + what)

    return said


@contextmanager
def served(recipe: str, profile: str | None, overrides: dict[str, ArgValue], port: int,
           host: str = "127.0.0.1", trust: bool = False, say: Say = lambda _: None,
           cluster: str | None = None) -> Iterator[Boot]:
    """Serve `recipe` at `profile` with `overrides` until the block ends (Ctrl-C and errors
    included: the engine is stopped and waited for)."""
    plan = build_plan(recipe, profile, cluster, overrides, port, host)
    run, process = serve_local(plan, progress=steps(say), trust=trust)
    try:
        yield Boot(plan, run.run_id, {
            "run_id": run.run_id, "profile": profile, "overrides": overrides,
            "engine_args": plan.engine_args, "boot": run.boot.model_dump(mode="json"),
            "timings": run.timings.model_dump(mode="json")})
    finally:
        stop_run(run)
        process.wait(timeout=60)
