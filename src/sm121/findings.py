"""Findings: what validation and the doctor report, each with severity, evidence and fix."""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict

from sm121.errors import Sm121Error
from sm121.recipes.schema import Severity


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
