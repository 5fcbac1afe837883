"""Reports: a terminal summary after a run, and `sm121 bench report` (Markdown + PNG)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.table import Table

from sm121.bench.format import fmt, table_rows
from sm121.cli.output import console


def console_summary(data: dict[str, Any]) -> None:
    """The comparison (ab) or the scenario summary, as a rich table."""
    headers, rows = table_rows(data)
    if not rows:
        console.print(data.get("summary"))
        return
    table = Table(*headers, title=f"{data['scenario']} ({data['kind']}, {data['status']})")
    for row in rows:
        table.add_row(*row)
    console.print(table)


def write_report(paths: list[Path], out: Path, title: str) -> Path:
    from sm121.bench.report_md import render_report

    return render_report(paths, out, title)


__all__ = ["console_summary", "write_report", "fmt"]
