"""The soak's JSONL lines (`bench soak --out FILE.jsonl`, one per line, appended as they
happen) and the summary `bench soak --json` prints, as models."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from sm121.bench.result_models import Number, Open


class SoakParams(Open):
    """What the soak was asked (`runner.SoakRequest` less its process watch and its file),
    written at the start and again on each resume."""

    url: str
    model: str
    workload: str
    agents: int
    duration_s: Number
    report_every_s: Number
    resume: bool = False
    max_tokens: int | None = None
    slo_s: Number = 60.0
    metrics_url: str | None = None


class SoakStart(Open):
    kind: Literal["soak-start"]
    what: str
    elapsed_s: Number
    time: str
    params: SoakParams


class SoakEvent(Open):
    """An engine restart seen, or a resumed soak (which repeats its params)."""

    kind: Literal["event"]
    what: str
    elapsed_s: Number
    time: str
    params: SoakParams | None = None


class SoakInterval(Open):
    """One --report-every interval: the agents' goodput and the engine's and host's state."""

    kind: Literal["soak"]
    time: str
    elapsed_s: Number
    interval_s: Number
    requests_ok: int
    requests_good: int | None = None
    errors: int
    error_samples: list[str] = Field(default_factory=list)
    completion_tokens: int
    goodput_tok_s: Number | None = None
    prompt_tokens: int | None = None
    cached_tokens: int | None = None
    latency_p50_s: Number | None = None
    latency_p95_s: Number | None = None
    engine_up: bool | None = None
    kv_usage_pct: Number | None = None
    engine_rss_gib: Number | None = None
    engine_restarts: int = 0
    mem_available_gib: Number | None = None
    mem_free_gib: Number | None = None
    page_cache_gib: Number | None = None
    swap_used_gib: Number | None = None


class SoakEnd(Open):
    kind: Literal["soak-end"]
    status: Literal["complete", "interrupted"]
    elapsed_s: Number
    time: str
    requests_ok: int
    errors: int
    completion_tokens: int
    engine_restarts: int


SoakLine = Annotated[SoakStart | SoakEvent | SoakInterval | SoakEnd,
                     Field(discriminator="kind")]


class SoakSummary(Open):
    """`run_soak`'s return value: totals over the whole soak."""

    status: Literal["complete", "interrupted"]
    elapsed_s: Number
    requests_ok: int
    errors: int
    completion_tokens: int
    engine_restarts: int
    out: str
