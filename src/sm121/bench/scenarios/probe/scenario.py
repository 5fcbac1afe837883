"""`probe` as a `Scenario`. Its command (`sm121 bench probe`) is written by hand in cli/ and
every other scenario runs it first; its results file records no samples, and its summary is
the probe report."""

from __future__ import annotations

from sm121.bench.context import Context
from sm121.bench.result_models import Open, ProbeReport
from sm121.bench.scenario import Params, Scenario
from sm121.bench.scenarios.probe.run import probe_server


class Probe(Scenario[Open, ProbeReport]):
    name = "probe"
    help = ("Does this server report token ids, and how many tokens does a chunk carry? "
            "Exits 1 when streams cannot be counted safely.")
    summary = ProbeReport

    async def run(self, ctx: Context, params: Params) -> ProbeReport:
        return await probe_server(ctx.client)
