"""What `retrieval` records: one sample per needle, and its summary."""

from __future__ import annotations

from sm121.bench.result_models import Number, Open
from sm121.bench.scenario import Params, option


class RetrievalParams(Params):
    lengths: list[int] = option([4096, 16384], "--lengths", "Context lengths (tokens).",
                                nonempty="4096,16384")
    depths: list[float] = option([0.08, 0.5, 0.92], "--depths")


class RetrievalSettings(RetrievalParams):
    """Everything a run uses: the command's params and the knobs only `--param` reaches."""

    distractors: int = 2
    max_tokens: int = 16


class RetrievalSample(Open):
    """One needle at one depth of one context length."""

    length: int
    depth: Number
    prompt_tokens: int | None = None
    ttft_s: Number | None = None
    code: str | None = None
    answer: str | None = None
    found: bool | None = None
    distractors_returned: list[str] = []  # the codes it answered instead


class RetrievalSummary(Open):
    found: int
    cases: int
    distractors_returned: int
    by_length: dict[str, int]
