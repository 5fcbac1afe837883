"""The agent-check report (`bench agent-check --out FILE` writes FILE.json, `--json` prints
it) as a model: what each case found, with its evidence."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from sm121.bench.result_models import Open


class ExchangeRecord(Open):
    """One HTTP request and its reply, cut to excerpts (`model.Exchange`)."""

    method: str
    path: str
    request: str
    status: int | None
    reply: str


class CaseRecord(Open):
    name: str
    status: Literal["pass", "fail", "unsupported"]
    reason: str
    evidence: list[ExchangeRecord] = Field(default_factory=list)


class CaseCounts(Open):
    pass_: int = Field(0, alias="pass")
    fail: int = 0
    unsupported: int = 0


class AgentCheckReport(Open):
    kind: Literal["agent-check"]
    target: str
    model: str | None
    max_model_len: int | None
    elapsed_s: float
    summary: CaseCounts
    cases: list[CaseRecord]
    interrupted: bool = False  # Ctrl-C: the cases listed were checked
