"""`knee` as a `Scenario`: its params, A/B headline and terminal lines."""

from __future__ import annotations

from sm121.bench.result_models import Open
from sm121.bench.runner import Context
from sm121.bench.scenario import Params, Record, Scenario, option
from sm121.bench.scenarios.knee.console import console
from sm121.bench.scenarios.knee.run import HEADLINE, flatten, knee


class KneeParams(Params):
    steps: list[int] = option([128, 256, 512, 1024, 2048, 4096, 8192, 16384], "--steps",
                              "Tokens per step.", nonempty="128,2048")
    batches: list[int] = option([1, 2, 4, 8, 16, 32], "--batches", "Decode batch sizes.",
                                nonempty="1,8")
    reps: int = option(3, "--reps", "Measured repetitions per size.")
    decode_tokens: int = option(128, "--decode-tokens", "Tokens per decode stream.")
    chunk: int | None = option(None, "--chunk", "The engine's max-num-batched-tokens "
                               "(larger steps are dropped).")


class KneeSample(Open):
    """One measured (or warm-up, rep -1) prefill step or decode batch."""

    kind: str
    rep: int


class KneeSummary(Open):
    """`analysis.summarize_knee`, with the sizes measured and dropped."""

    steps: list[int] = []
    dropped_steps: list[int] = []
    batches: list[int] = []


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
        return KneeSummary.model_validate(await knee(ctx, params.given()))

    def flatten(self, samples: list[Record]) -> Record:
        return flatten(samples)

    def console(self, summary: Record) -> list[str]:
        return console(summary)
