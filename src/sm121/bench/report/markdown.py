"""`sm121 bench report`: Markdown with tables and PNG plots, from one or more results files.
What a scenario's section holds comes from its `Scenario` class (`scenarios` table): this module
knows no scenario by name."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sm121.bench.report.format import headline_table
from sm121.bench.results import load_results
from sm121.bench.scenario import Results, Scenario, Unknown
from sm121.bench.scenarios import find
from sm121.bench.timeline import timeline_section
from sm121.display_markdown import document, inert


def _head(data: dict[str, Any], stem: str) -> list[str]:
    """The file's header as it is: every value in it is the file's (display_markdown)."""
    head = [f"## {inert(data['scenario'])} ({inert(data['kind'])}) — "
            f"{inert(stem + '.json', code=True)}", "",
            f"status {inert(data['status'])}, sm121 {inert(data['sm121_version'])}, created "
            f"{inert(data['created'])}; params: {inert(data['params'], None, code=True)}", ""]
    first = data["samples"][0] if data["kind"] == "ab" and data["samples"] else None
    probe = data.get("probe") or (first.get("probe") if isinstance(first, dict) else None)
    if isinstance(probe, dict) and probe:
        head += [f"Probe: token ids {inert(probe.get('token_ids'))}, safe "
                 f"{inert(probe.get('safe'))}, tokens per chunk "
                 f"{inert(probe.get('histogram'))}.", ""]
    return head


def _section(scenario: Scenario[Any, Any], results: Results, out: Path, stem: str,
             draw: bool) -> list[str]:
    results = scenario.recompute(results)
    files = scenario.plots(results, out, stem) if draw else []
    lines = scenario.section(results, files)
    if lines is None:  # no section of its own: the headline table
        return headline_table(results)
    return lines


def render_report(paths: list[Path], out: Path, title: str, slo: str | None = None,
                  draw: bool = True) -> Path:
    """`slo` judges agent runs against another SLO than the one they were run with; `draw`
    False leaves the plots out (no PNG, no image line): the text alone, fast."""
    out.mkdir(parents=True, exist_ok=True)
    lines = [f"# {title}", ""]
    runs: dict[str, tuple[Scenario[Any, Any], list[Results]]] = {}
    for path in paths:
        if path.suffix == ".jsonl":  # a time series: `sm121 top --record`, `bench soak`
            lines += timeline_section(path, out)
            continue
        stem = path.name.removesuffix(".gz").removesuffix(".json")
        data = load_results(path)  # the file as JSON: its header is printed as it is
        scenario = find(data["scenario"]) or Unknown()
        results = scenario.read(data)
        runs.setdefault(data["scenario"], (scenario, []))[1].append(results)
        if slo:
            scenario.rejudge(results, slo)
        lines += _head(data, stem) + _section(scenario, results, out, stem, draw)
    for scenario, theirs in runs.values():  # what only several runs of a scenario show
        lines += scenario.across(theirs)
    report = out / "report.md"
    report.write_text(document("\n".join(lines) + "\n"))
    return report
