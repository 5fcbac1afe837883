"""`soak` as a `Scenario`: its summary model. A soak watches the engine's process and its
own time series for hours (`soak.runner.run_soak`, `sm121 bench soak`), so it does not run
in the runner's context of one client."""

from __future__ import annotations

from sm121.bench.context import Context
from sm121.bench.result_models import Open
from sm121.bench.scenario import Params, Scenario
from sm121.bench.scenarios.soak.records import SoakSummary
from sm121.errors import Sm121Error


class Soak(Scenario[Open, SoakSummary]):
    name = "soak"
    help = "Agent sessions for hours: leaks, drift and engine restarts over time."
    summary = SoakSummary
    api = "chat"

    async def run(self, ctx: Context, params: Params) -> SoakSummary:
        raise Sm121Error("a soak runs on its own clock and process watch, not in a scenario "
                         "run", "run `sm121 bench soak --url URL --duration 2h`")
