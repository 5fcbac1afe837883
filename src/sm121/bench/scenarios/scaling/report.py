"""The report of `decode-scaling` and `prefill-scaling`: one row per concurrency level and
the rate against N (an A/B of them: the headline table only)."""

from __future__ import annotations

from pathlib import Path

from sm121.bench.report import plots
from sm121.bench.report.format import headline_table, markdown_table, md
from sm121.bench.report.sections import images
from sm121.bench.result_models import ScenarioResults
from sm121.bench.scenario import Results
from sm121.bench.scenarios.scaling.models import DecodeMetrics, PrefillMetrics, ScalingSample
from sm121.display_markdown import inert


def scaling_plots(results: Results, out: Path, stem: str) -> list[Path]:
    if not isinstance(results, ScenarioResults):  # an A/B of a scaling scenario: its table
        return []
    kind = "decode" if results.scenario == "decode-scaling" else "prefill"
    key = "aggregate_tok_s" if kind == "decode" else "prefill_tok_s"
    rows = [s.metrics for s in results.samples]
    curve = {kind: {results.server.url or "run": [(r.n, getattr(r, key)) for r in rows]}}
    return [plots.scaling(curve, out / f"{stem}-scaling.png")]


def _columns(sample: ScalingSample) -> list[str]:
    """The metrics a row holds: N, then its kind's metrics in their model's order, then any
    the model does not name (the engine's, a newer sm121's) as the file holds them."""
    held = list(sample.metrics.model_dump(exclude_unset=True))
    order = ["n", *(DecodeMetrics if sample.kind == "decode" else PrefillMetrics).model_fields]
    return [k for k in order if k in held] + [k for k in held if k not in order]


def scaling_section(results: Results, files: list[Path]) -> list[str]:
    if not isinstance(results, ScenarioResults):
        return headline_table(results)
    samples: list[ScalingSample] = results.samples
    headers = _columns(samples[0]) if samples else []
    body = [[md(getattr(s.metrics, h, None)) for h in headers] for s in samples]
    return [*markdown_table([inert(h) for h in headers], body), *images(files), ""]
