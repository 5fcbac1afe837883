"""What one agent-check case reports: pass, fail or unsupported, with the evidence."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from sm121.bench.scenarios.agent_check.report_file import CaseRecord, ExchangeRecord, Status
from sm121.errors import Sm121Error

EXCERPT_CHARS = 400
__all__ = ["CaseFailed", "CaseResult", "CaseUnsupported", "Exchange", "Status", "excerpt"]


@dataclass(frozen=True)
class Exchange:
    """One HTTP request and what came back, cut to excerpts (never a secret: no headers)."""

    method: str
    path: str
    request: str
    status: int | None
    reply: str

    @classmethod
    def of(cls, method: str, path: str, body: Any, status: int | None, reply: Any
           ) -> Exchange:
        return cls(method, path, excerpt(body), status, excerpt(reply))


@dataclass(frozen=True)
class CaseResult:
    name: str
    status: Status
    reason: str
    evidence: list[Exchange] = field(default_factory=list)

    def record(self) -> CaseRecord:
        """The case as the report file writes it."""
        return CaseRecord(name=self.name, status=self.status, reason=self.reason,
                          evidence=[ExchangeRecord(method=e.method, path=e.path,
                                                   request=e.request, status=e.status,
                                                   reply=e.reply) for e in self.evidence])


class CaseFailed(Sm121Error):
    """Raised inside a case: the case fails with this reason."""


class CaseUnsupported(Sm121Error):
    """Raised inside a case: the endpoint does not offer what the case checks."""


def excerpt(value: Any, limit: int = EXCERPT_CHARS) -> str:
    """JSON (or text) cut to `limit` characters; long message contents are shortened first,
    so a 60K-token prompt shows as its length, not its text."""
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(_shorten(value), ensure_ascii=False)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} chars)"


def _shorten(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _shorten(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shorten(v) for v in value]
    if isinstance(value, str) and len(value) > 200:
        return value[:120] + f"... <{len(value)} chars>"
    return value
