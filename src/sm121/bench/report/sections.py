"""What the report sections of several scenarios share: image lines, the measured entries
of an A/B, a table of one row per sample."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sm121.bench.report.format import fmt, markdown_table


def images(files: list[Path]) -> list[str]:
    return [f"![{f.stem}]({f.name})" for f in files]


def measured(data: dict[str, Any]) -> list[dict[str, Any]]:
    """A/B entries that measured something (a failed boot is recorded with its error)."""
    return [e for e in data["samples"] if not e.get("error")]


def rows_section(data: dict[str, Any], keys: tuple[str, ...]) -> list[str]:
    """One table row per sample, these keys as columns."""
    rows = [[fmt(s.get(k)) for k in keys] for s in data["samples"]]
    return markdown_table(list(keys), rows)
