"""Findings: what validation and the doctor report, each with severity, evidence and fix."""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict

from sm121.errors import Sm121Error


class Severity(StrEnum):
    """How bad one finding is."""

    ERROR = "error"
    WARNING = "warning"


# The one status vocabulary of every check (doctor, cluster check, validation): a check's
# status is `ok` or `info` when it found nothing wrong, else its worst finding's severity.
Status = Literal["ok", "info", "warning", "error"]
STATUS_ORDER: tuple[Status, ...] = ("ok", "info", "warning", "error")


def worst(statuses: Iterable[Status]) -> Status:
    return max(statuses, key=STATUS_ORDER.index, default="ok")


class Finding(BaseModel):
    model_config = ConfigDict(frozen=True)

    severity: Severity
    source: str  # the file (or node) the finding is about
    field: str  # the field, e.g. `profiles.agent.args.gpu-memory-utilization`
    message: str
    allowed: str = ""  # the values that would be accepted
    fix: str = ""

    def render(self) -> str:
        text = f"{self.severity.value}: {self.source}: {self.field}: {self.message}"
        if self.allowed:
            text += f" (allowed: {self.allowed})"
        if self.fix:
            text += f"\n  fix: {self.fix}"
        return text


def errors(findings: Iterable[Finding]) -> list[Finding]:
    return [f for f in findings if f.severity is Severity.ERROR]


def raise_on_errors(findings: Iterable[Finding], what: str) -> None:
    bad = errors(findings)
    if bad:
        raise Sm121Error(
            f"{what} is not valid ({len(bad)} error{'s' if len(bad) > 1 else ''}):\n"
            + "\n".join(f.render() for f in bad),
            "fix the fields named above; `sm121 recipes show NAME` prints the recipe as loaded",
        )
