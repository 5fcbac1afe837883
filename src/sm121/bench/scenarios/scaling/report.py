"""The report of `decode-scaling` and `prefill-scaling`: one row per concurrency level and
the rate against N (an A/B of them: the headline table only)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sm121.bench.report import plots
from sm121.bench.report.format import fmt, markdown_table, table_rows
from sm121.bench.report.sections import images
from sm121.bench.scenarios.scaling.models import ScalingSample


def scaling_plots(data: dict[str, Any], out: Path, stem: str) -> list[Path]:
    if data["kind"] != "scenario":  # an A/B of a scaling scenario: its table only
        return []
    kind = "decode" if data["scenario"] == "decode-scaling" else "prefill"
    key = "aggregate_tok_s" if kind == "decode" else "prefill_tok_s"
    rows = [ScalingSample.model_validate(s).metrics for s in data["samples"]]
    curve = {kind: {data["server"].get("url", "run"): [(r.n, getattr(r, key)) for r in rows]}}
    return [plots.scaling(curve, out / f"{stem}-scaling.png")]


def scaling_section(data: dict[str, Any], files: list[Path]) -> list[str]:
    if data["kind"] != "scenario":
        return markdown_table(*table_rows(data))
    rows = [s["metrics"] for s in data["samples"]]  # as the file holds them: its column order
    headers = list(rows[0]) if rows else []
    body = [[fmt(r.get(h)) for h in headers] for r in rows]
    return [*markdown_table(headers, body), *images(files), ""]
