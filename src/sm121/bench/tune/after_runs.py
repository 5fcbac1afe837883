"""What an arm's boot measures after its runs at the target N, while the engine is still up:
its exclusive long prefill (tune/exclusive.py) and its capacity bisection (one agents run per
N, tune/capacity.py choosing each N), then its capacity bracket recorded in tune.json. Apart
from the boots themselves (tune/arm_boots.py, tune/confirm_boots.py) because a first boot, a
boot that finishes a cut bisection and a confirmation boot all run some of it."""

from __future__ import annotations

from collections.abc import Callable

from sm121.bench.boot import Boot
from sm121.bench.results import ResultsFile
from sm121.bench.tune.capacity import Bracket, next_probe, resolution_for
from sm121.bench.tune.choose import capacity
from sm121.bench.tune.costs import estimates, left_s
from sm121.bench.tune.exclusive import measure_exclusive
from sm121.bench.tune.files import AbFile
from sm121.bench.tune.first_prompt import CountedPrompt
from sm121.bench.tune.knobs import engine_of
from sm121.bench.tune.predict import predicted_for
from sm121.bench.tune.request import TuneRequest, agent_params
from sm121.bench.tune.state import TuneState
from sm121.bench.tune.sweep import run_point
from sm121.errors import Sm121Error
from sm121.memory.cold_start import FreshRate
from sm121.progress import Say
from sm121.recipes.loader import load_recipe
from sm121.safe_paths import file_under


def exclusive(request: TuneRequest, state: TuneState, boot: Boot, name: str,
              say: Say) -> None:
    """The boot's exclusive long prefill (tune/exclusive.py), right after its runs at the
    target N, while the engine is idle."""
    found = measure_exclusive(boot, agent_params(request), say)
    if found is not None:
        state.add_exclusive(name, found)


def exclusive_then_bisection(request: TuneRequest, state: TuneState, results: ResultsFile,
                             name: str, probes: int, say: Say,
                             counted: CountedPrompt | None,
                             fresh: FreshRate | None = None) -> Callable[[Boot], None]:
    """What an arm's boot runs after its runs at the target N: its exclusive long prefill,
    then at most `probes` capacity probes."""
    def after(boot: Boot) -> None:
        exclusive(request, state, boot, name, say)
        bisect(request, state, results, boot, name, probes, say, counted, fresh)

    return after


def bisect(request: TuneRequest, state: TuneState, results: ResultsFile, boot: Boot,
           name: str, probes: int, say: Say, counted: CountedPrompt | None = None,
           fresh: FreshRate | None = None) -> None:
    """The capacity bisection on this boot: one agents run per N, at most `probes` of them,
    each only when the budget still holds it; about 0.9x and 1.1x of the arm's predicted
    capacity first (bench/tune/predict.py; `counted` and `fresh`: the knee's first prompt and
    its rate), when its pool is known."""
    engine = engine_of(load_recipe(request.recipe).recipe.engine.kind)
    pred = predicted_for(request, AbFile.model_validate(results.data).samples, name, engine,
                         counted, fresh)
    if pred is not None:
        say(f"  {name}: predicted: {pred.headline()}")
    for _ in range(probes):
        found = capacity_so_far(request, state, results, name)
        if not found.tested:
            return  # no verdict at the target N (its runs failed)
        n = next_probe(found.tested, request.largest_n, resolution_for(request.agents),
                       pred.predicted if pred is not None else None)
        if n is None:
            break
        est = estimates(request, AbFile.model_validate(results.data))
        need = est.rep_s * max(1.0, n / request.agents)
        left = left_s(request, state)
        if left < need:
            say(f"  {name}: bisection stopped before N={n}: about {need:.0f} s needed, "
                f"{left:.0f} s of the budget left")
            break
        say(f"  {name}: capacity {found.text}; probing N={n}")
        out = file_under(request.out, "capacity", f"{name}-agents-{n}.json")
        try:
            point = run_point(boot, agent_params(request), n, out, say)
        except Sm121Error as exc:
            say(f"  {name}: N={n} failed: {exc}")
            break
        state.add_sweep_point(name, point)
    record_capacity(request, state, results, name, say)


def capacity_so_far(request: TuneRequest, state: TuneState, results: ResultsFile,
                    name: str) -> Bracket:
    """The arm's bracket from its runs at the target N and its probes so far."""
    return capacity(AbFile.model_validate(results.data).samples, name, request.agents,
                    state.sweep(name))


def record_capacity(request: TuneRequest, state: TuneState, results: ResultsFile, name: str,
                    say: Say) -> None:
    found = capacity_so_far(request, state, results, name)
    state.record.capacity[name] = found.record()
    say(f"  {name}: capacity {found.text}")
    state.changed("capacity")
