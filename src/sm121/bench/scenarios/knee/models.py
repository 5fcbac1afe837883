"""What `knee` takes and records: its params, one sample per prefill step or decode batch
measured, and its summary (both curves, the knee and the decode saturation per window)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from sm121.bench.result_models import Number, Open, Stats
from sm121.bench.scenario import Params, option

TOLERANCE = 0.05  # the knee: the smallest size within 5% of the peak rate


class KneeParams(Params):
    steps: list[int] = option([128, 256, 512, 1024, 2048, 4096, 8192, 16384], "--steps",
                              "Tokens per step.", nonempty="128,2048")
    batches: list[int] = option([1, 2, 4, 8, 16, 32], "--batches", "Decode batch sizes.",
                                nonempty="1,8")
    reps: int = option(3, "--reps", "Measured repetitions per size.")
    decode_tokens: int = option(128, "--decode-tokens", "Tokens per decode stream.")
    chunk: int | None = option(None, "--chunk", "The engine's max-num-batched-tokens "
                               "(larger steps are dropped).")


class KneeSettings(KneeParams):
    """Everything a run uses: the command's params and the knobs only `--param` reaches."""

    tolerance: float = TOLERANCE


class KneeSample(Open):
    """One measured (or warm-up, rep -1) prefill step or decode batch, as a file holds it."""

    kind: str
    rep: int


class PrefillStep(KneeSample):
    """One exact prompt of `step` tokens, alone, max_tokens 1: its rate in both windows."""

    kind: Literal["prefill"] = "prefill"
    step: int
    prompt_tokens: int | None = None
    cached_tokens: int | None = None  # as the server sent it: None, it sent no count
    engine_s: Number | None = None
    client_s: Number | None = None
    engine_tok_s: Number | None = None
    client_tok_s: Number | None = None


class DecodeBatch(KneeSample):
    """`batch` streams decoding together: the engine's and the client's aggregate rate."""

    kind: Literal["decode"] = "decode"
    batch: int
    generated: Number | None = None
    engine_mean_decode_s: Number | None = None
    engine_tok_s: Number | None = None
    client_tok_s: Number | None = None
    per_stream_tok_s_median: Number | None = None


class StepRate(Stats):
    """A point of the prefill curve: the rate's stats over repetitions at one step size."""

    step: int


class BatchRate(Stats):
    """A point of the decode curve: the rate's stats over repetitions at one batch size."""

    batch: int


class KneePoint(Open):
    """The peak of a curve and the smallest size within the tolerance of it."""

    peak: Number | None = None
    peak_at: int | None = None
    knee_at: int | None = None
    knee_rate: Number | None = None
    share_of_peak: dict[str, Number] | None = None  # size -> median / peak (when measured)


class Saturation(KneePoint):
    saturated: bool = False  # False: the largest batch measured was still the knee


class KneeWindow(Open):
    """Both curves in one window (engine or client) and what they say."""

    prefill: list[StepRate] = Field(default_factory=list)
    knee: KneePoint = Field(default_factory=KneePoint)
    decode: list[BatchRate] = Field(default_factory=list)
    decode_saturation: Saturation = Field(default_factory=Saturation)


class KneeSummary(Open):
    """`analysis.summarize_knee`, with the sizes measured and dropped."""

    steps: list[int] = []
    dropped_steps: list[int] = []
    batches: list[int] = []
    tolerance: float = TOLERANCE
    engine: KneeWindow | None = None
    client: KneeWindow | None = None
    reps: int | None = None
    # The salt's check: the prompt tokens every salted prefill prompt found cached, summed by
    # bench/cached.py's rule; 0: the engine counted nothing cached; None: it sends no count, so
    # nothing was checked (files written before the check lack the key: console says nothing)
    prefill_cached: int | None = None


class KneeHeadline(BaseModel):
    """One knee run's headline numbers (`run.HEADLINE`'s keys: an A/B's table)."""

    knee_step_engine: Number | None = None
    peak_prefill_tok_s_engine: Number | None = None
    knee_step_client: Number | None = None
    decode_saturation_batch: Number | None = None
    peak_decode_tok_s_engine: Number | None = None
