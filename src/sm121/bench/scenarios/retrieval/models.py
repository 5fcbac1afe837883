"""What `retrieval` records: one sample per needle, and its summary."""

from __future__ import annotations

from sm121.bench.result_models import Number, Open


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
