"""The agent-check report (`bench agent-check --out FILE` writes FILE.json, `--json` prints
it) as a model: what each case found, with its evidence."""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import Field

from sm121.bench.result_models import Open


class Status(StrEnum):
    PASS = "pass"
    FAIL = "fail"
    UNSUPPORTED = "unsupported"  # the endpoint does not offer it (404, or no parser set)


class ExchangeRecord(Open):
    """One HTTP request and its reply, cut to excerpts (`model.Exchange`)."""

    method: str
    path: str
    request: str
    status: int | None
    reply: str


class CaseRecord(Open):
    name: str
    status: Status
    reason: str
    evidence: list[ExchangeRecord] = Field(default_factory=list)


class CaseCounts(Open):
    pass_: int = Field(0, alias="pass")
    fail: int = 0
    unsupported: int = 0


class AgentCheckReport(Open):
    kind: Literal["agent-check"]
    api: str = "chat"  # the protocol checked (reports before --api have none: chat)
    target: str
    model: str | None
    max_model_len: int | None
    elapsed_s: float
    summary: CaseCounts
    cases: list[CaseRecord]
    interrupted: bool = False  # Ctrl-C: the cases listed were checked
