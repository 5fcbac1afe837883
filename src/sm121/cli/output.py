"""Shared CLI output: one console, JSON printing, and how errors reach the user."""

from __future__ import annotations

import json
import sys
from typing import Any

from pydantic import BaseModel
from rich.console import Console

console = Console()
err_console = Console(stderr=True)


def print_json(data: Any) -> None:
    if isinstance(data, BaseModel):
        data = data.model_dump(mode="json")
    elif isinstance(data, list):
        data = [d.model_dump(mode="json") if isinstance(d, BaseModel) else d for d in data]
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")


def console_summary(data: dict[str, Any]) -> None:
    """A results file's comparison (ab) or scenario summary, as a rich table."""
    from rich.table import Table

    from sm121.bench.agents.report import AGENT_SCENARIOS, console_lines
    from sm121.bench.format import table_rows

    summary = data.get("summary") or {}
    if data["scenario"] in AGENT_SCENARIOS and data["kind"] == "scenario" and summary.get("slo"):
        for line in console_lines(summary):
            console.print(line, highlight=False)
        return
    if summary.get("verdict"):
        console.print(f"best profile by goodput: {summary['verdict']['best']}. "
                      f"{summary['verdict']['why']}", highlight=False)
    headers, rows = table_rows(data)
    if not rows:
        console.print(data.get("summary"))
        return
    table = Table(*headers, title=f"{data['scenario']} ({data['kind']}, {data['status']})")
    for row in rows:
        table.add_row(*row)
    console.print(table)


def parse_sets(values: list[str] | None) -> dict[str, Any]:
    """`--set key=value` pairs; values are YAML scalars, so 0.78 is a float and true a bool;
    a JSON object or list stays the text vLLM's JSON flags take."""
    import yaml

    from sm121.errors import Sm121Error
    from sm121.recipes.schema import normalize_arg

    result: dict[str, Any] = {}
    for item in values or []:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise Sm121Error(f"--set {item!r} is not key=value",
                             "example: --set max-num-seqs=4")
        value = yaml.safe_load(raw) if raw.strip() else None
        if isinstance(value, dict | list):  # a JSON flag (speculative-config, ...): its text
            value = raw.strip()
        result[normalize_arg(key.strip())] = value
    return result
