"""One engine boot for measurements: a recipe at a profile with overrides, served the way
`sm121 serve` serves it (here, on --cluster's nodes, supervised when the recipe says so), held
for as many measurements as the caller makes on it, and always stopped. What `bench ab`,
`bench knee --recipe` and `tune` share; the serving itself is sm121.serving's."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from sm121.bench.result_models import Open
from sm121.boot_facts import BootFacts
from sm121.plan.build import build_plan
from sm121.plan.model import ServePlan
from sm121.progress import Progress, Say
from sm121.recipes.schema import ArgValue
from sm121.runs.state import Timings
from sm121.serving.serve import mode_for
from sm121.serving.served import served


class BootRecord(Open):
    """What a results file keeps of a boot: the run, how it was served, and its facts."""

    run_id: str
    profile: str | None = None
    overrides: dict[str, ArgValue] = {}
    mode: str | None = None
    nodes: list[str] = []
    engine_args: dict[str, ArgValue] = {}
    boot: BootFacts = BootFacts()  # the boot log's facts
    timings: Timings = Timings()  # the launch's phases


@dataclass(frozen=True)
class Boot:
    """A served engine: its plan (URL, model, engine args) and its run record."""

    plan: ServePlan
    run_id: str
    record: BootRecord


def steps(say: Say, prefix: str = "") -> Progress:
    """Progress as lines of `say` (steps only: the caller shows its own counts)."""
    def said(what: str, done: float | None = None, total: float | None = None, /) -> None:
        say(prefix + what)

    return said


@contextmanager
def booted(recipe: str, profile: str | None, overrides: dict[str, ArgValue], port: int,
           host: str = "127.0.0.1", trust: bool = False, say: Say = lambda _: None,
           cluster: str | None = None) -> Iterator[Boot]:
    """Serve `recipe` at `profile` with `overrides` until the block ends (Ctrl-C and errors
    included: every process of the run is stopped). With `cluster` (a cluster file) the plan
    runs on its nodes over SSH, one node or many."""
    plan = build_plan(recipe, profile, cluster, overrides, port, host)
    mode = mode_for(plan, cluster is not None)
    with served(plan, mode, progress=steps(say), trust=trust) as run:
        yield Boot(plan, run.run_id, BootRecord(
            run_id=run.run_id, profile=profile, overrides=overrides, mode=mode,
            nodes=[n.name for n in plan.nodes], engine_args=plan.engine_args,
            boot=BootFacts(**run.info.boot.model_dump()),  # every key, as the file kept them
            timings=Timings(**run.info.timings.model_dump())))
