"""Numbers and tables as text, shared by the terminal summary and the Markdown report."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from sm121.bench.result_models import AbResults, AbSummary, Stats
from sm121.bench.scenario import Results
from sm121.bench.scenarios import find
from sm121.display_markdown import inert


def fmt(value: Any, kind: str = "") -> str:
    if value is None:
        return "-"
    if kind == "pct":
        return f"{100 * value:.1f}%"
    if kind == "int":
        return f"{value:,.0f}"
    if kind == "x":
        return f"{value:,.1f}x"
    if kind == "s":
        return f"{value:.3g} s" if value < 10 else f"{value:,.1f} s"
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def md(value: Any, kind: str = "") -> str:
    """A value of a results file in Markdown: a number as `fmt` writes it, anything else (a
    string where a number was expected, a key only a newer sm121 writes) inert."""
    if value is None or isinstance(value, int | float):
        return fmt(value, kind)
    return inert(value)


def cell(stats: Stats | None, kind: str) -> str:
    """median [min-max] (n)"""
    if stats is None or stats.median is None:
        return "-"
    if stats.n == 1:
        return f"{fmt(stats.median, kind)} n=1"
    return (f"{fmt(stats.median, kind)} [{fmt(stats.min, kind)}-{fmt(stats.max, kind)}]"
            f" n={stats.n}")


def _stats(held: object) -> Stats | None:
    """A headline metric's stats in a scenario's summary; None where it holds none."""
    if isinstance(held, Stats) or held is None:
        return held
    return Stats.model_validate(held.model_dump() if isinstance(held, BaseModel) else held)


def table_rows(results: Results, shown: Callable[[str], str] = str
               ) -> tuple[list[str], list[list[str]]]:
    """(headers, rows) of an A/B comparison or of an overlap summary; empty when none.
    `shown`: how a profile's name (the file's) is written: as it is for a terminal table (its
    console escapes), `inert` for Markdown (`headline_table`)."""
    spec = find(results.scenario)
    headline = spec.headline if spec is not None else ()
    if spec is None or not headline:
        return [], []
    summary = results.summary
    if isinstance(results, AbResults) and isinstance(summary, AbSummary) and summary.metrics:
        profiles = results.params.profiles
        base = profiles[0]
        headers = ["metric", *map(shown, profiles),
                   *[f"{shown(p)}/{shown(base)}" for p in profiles[1:]]]
        rows = []
        for key, label, kind, _better in headline:
            entry = summary.metrics.get(key)
            if entry is None:
                continue
            ratios = [fmt(entry.ratio_to_baseline.get(p), "x") for p in profiles[1:]]
            rows.append([label, *[cell(entry.profiles[p], kind) for p in profiles], *ratios])
        return headers, rows
    if spec.rep_stats:  # a scenario's own summary: stats of the headline over repetitions
        return ["metric", "median [min-max]"], [
            [label, cell(_stats(getattr(summary, key, None)), kind)]
            for key, label, kind, _ in headline]
    return [], []


def markdown_table(headers: list[str], rows: list[list[str]]) -> list[str]:
    """A Markdown table and the blank line after it; nothing when there are no rows."""
    if not rows:
        return []
    return ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers),
            *["| " + " | ".join(r) + " |" for r in rows], ""]


def headline_table(results: Results) -> list[str]:
    """The headline comparison as a Markdown table (`table_rows`, the names in it inert)."""
    return markdown_table(*table_rows(results, inert))
