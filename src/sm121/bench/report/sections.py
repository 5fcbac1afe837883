"""What the report sections of several scenarios share: image lines, the measured entries
of an A/B, a table of one row per sample."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

from sm121.bench.report.format import markdown_table, md
from sm121.bench.result_models import AbEntry, AbResults
from sm121.bench.scenario import Results
from sm121.display_markdown import inert

S = TypeVar("S")


def images(files: list[Path]) -> list[str]:
    """Image lines for the plots beside the report; a PNG's name comes from the results file's
    name, so the alt text is inert and the link's path percent-encoded."""
    return [f"![{inert(f.stem)}]({quote(f.name)})" for f in files]


def measured(results: AbResults[S, Any]) -> list[AbEntry[S, Any]]:
    """A/B entries that measured something (a failed boot is recorded with its error)."""
    return [e for e in results.samples if not e.error]


def rows_section(results: Results, keys: tuple[str, ...]) -> list[str]:
    """One table row per sample of a run, these keys as columns."""
    rows = [[md(getattr(s, k, None)) for k in keys] for s in results.samples]
    return markdown_table(list(keys), rows)
