"""`knee` as a `Scenario`: its params, A/B headline and terminal lines."""

from __future__ import annotations

from sm121.bench.context import Context
from sm121.bench.scenario import Params, Scenario
from sm121.bench.scenarios.knee.console import console
from sm121.bench.scenarios.knee.models import KneeHeadline, KneeParams, KneeSample, KneeSettings, KneeSummary
from sm121.bench.scenarios.knee.run import HEADLINE, flatten, knee


class Knee(Scenario[KneeSample, KneeSummary]):
    name = "knee"
    help = ("The prefill knee and decode saturation on one engine: one exact prompt of N "
            "tokens per step size (alone, max_tokens 1: one step of N tokens), rate in the "
            "engine's window (its prefill-time histogram) and the client's (TTFT); decode "
            "tok/s by batch; repetitions with spread. The engine's max-num-batched-tokens "
            "must hold the largest step (--chunk drops larger ones); `sm121 tune` boots one "
            "that does.")
    params = KneeParams
    sample = KneeSample
    summary = KneeSummary
    api_option = False  # its prompts are token ids: completions only
    headline = HEADLINE

    async def run(self, ctx: Context, params: Params) -> KneeSummary:
        return await knee(ctx, KneeSettings.model_validate(params.given()))

    def flatten(self, samples: list[KneeSample]) -> KneeHeadline:
        return flatten(samples)

    def console(self, summary: KneeSummary) -> list[str]:
        return console(summary)
