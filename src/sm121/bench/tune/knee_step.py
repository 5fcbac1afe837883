"""tune's first step, the knee: the recipe booted for its knee (shown in the report, pricing
nothing), or read back from OUT/knee.json (or `--knee`) when measured; while the knee's engine
is up, the workload's first prompt counted on it (tune/first_prompt.py). And what the arms'
search reads of that file afterwards (`KneeFacts`). Apart from the arms' boots because it is
one boot of the recipe as it is, made once, before any arm exists."""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field

from sm121.bench.results import load_results
from sm121.bench.scenarios.knee.on_recipe import knee_on_recipe
from sm121.bench.tune import conditions
from sm121.bench.tune.cold_rate import cold_rate
from sm121.bench.tune.files import KneeFile
from sm121.bench.tune.first_prompt import CountedPrompt, count_on, said
from sm121.bench.tune.request import TuneRequest
from sm121.bench.tune.result import ColdRateRecord
from sm121.bench.tune.state import TuneState
from sm121.memory.cold_start import FreshRate
from sm121.progress import Say
from sm121.safe_paths import file_under


def measured_knee(request: TuneRequest, state: TuneState, base: str, say: Say) -> KneeFile:
    """The knee's results file: as measured (OUT/knee.json complete, or a copy of --knee),
    else the recipe's profile `base` booted and measured now."""
    path = file_under(request.out, "knee.json")  # copied into: never through a link
    if request.knee_file is not None and not path.is_file():
        shutil.copyfile(request.knee_file, path)
    if path.is_file():
        knee = KneeFile.model_validate(load_results(path))
        if knee.status == "complete":
            say(f"knee: measured ({path})")
            return knee
    say(f"knee: booting {request.recipe} for the knee")

    def first_prompt(url: str) -> dict[str, object]:
        """While the knee's engine is up: the arms' predictions take the working set from
        what it counts (tune/first_prompt.py)."""
        counted = count_on(url, request.workload, request.turns or 6)
        say(f"knee: {said(counted)}")
        return {"first_prompt": counted.model_dump(mode="json")}

    results = knee_on_recipe(request.recipe, base, {}, request.knee_params, path, request.port,
                             trust=request.trust, say=say, cluster=request.cluster,
                             host=request.host, while_up=first_prompt)
    state.save()
    return KneeFile.model_validate(results.to_json())


@dataclass(frozen=True)
class KneeFacts:
    """What the arms' search reads of the knee's results file: its boot's time to a first
    generation (the boot estimate before an arm has booted), the engine it measured, the
    first prompt its engine counted (the predictions' working set) and the rate of a fresh
    prompt of that length it measured (the predictions' cold start, tune/cold_rate.py)."""

    boot_s: float | None
    engine: str
    first_prompt: CountedPrompt | None = None
    cold_rate: ColdRateRecord = field(default_factory=lambda: cold_rate(None))

    @property
    def fresh(self) -> FreshRate | None:
        return self.cold_rate.rate()

    @staticmethod
    def of(knee: KneeFile, engine: str) -> KneeFacts:
        """`engine`: the recipe's engine, as its adapter names it."""
        boot = knee.boot.timings.first_generation_s if knee.boot else None
        return KneeFacts(boot, conditions.engine_version(knee.server.version, engine),
                         knee.first_prompt, cold_rate(knee))
