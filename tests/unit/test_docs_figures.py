"""Every results figure README.md and docs/*.md quote (an N* bracket, a goodput, a chosen arm,
agents held at a share of turns) is checked against the committed results file it names, so a
stale story fails the suite.

A figure is registered in FIGURES: its doc, the results file, and a function that renders the
quoted text from that file (a table row, a phrase); the doc must contain the rendering exactly.
Then every passage of the docs that looks like a results figure (FIGURE_LIKE) must lie inside
a registered rendering, or inside a phrase of NOT_RESULTS (a goal, a definition of the
notation) or NOT_COMMITTED (a figure whose measurement is not in this repository, with its
provenance). A figure typed by hand, or left standing after its file changed, fails here.
The results folders' own notes (docs/results/**) are the records themselves, written with their
runs; they are not read here."""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ["README.md", *sorted(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md"))]
TUNE_H200 = "docs/results/gpu-h200/tune-capacity/tune.json"
CLIFF_CPU = "docs/results/cpu-testbed/capacity/blocks-724/capacity.json"
GAUGES_CPU = "docs/results/cpu-testbed/capacity/gauges/sequences-agents-4.json.gz"
TUNE_FP8_CPU = "docs/results/cpu-testbed/tune-fp8/tune.json"

# What a results figure looks like in prose: an N* bracket or bound, an arm marked chosen, a
# goodput with its number, "largest N 8", "16 agents 100%".
FIGURE_LIKE = re.compile(
    r"(?:\d[\d,]* <= )?N\* (?:<|>=) \d[\d,]*"
    r"|\(chosen\b"
    r"|goodput (?:of )?\d[\d.]*%|\d[\d.]*% goodput"
    r"|largest N \d+"
    r"|\b\d+ agents:? \d[\d.]*%"
    r"|\bpaid (?:at least )?\d[\d.]*(?:-\d[\d.]*)?%")


@cache
def results(path: str) -> Any:
    file = ROOT / path
    opener = gzip.open if file.suffix == ".gz" else open
    with opener(file, "rt") as handle:
        return json.load(handle)


def _share(good: int, judged: int) -> str:
    return f"{good / judged:.1%} ({good}/{judged})"


def _sets(tune: dict[str, Any], arm: str) -> str:
    """What an arm changes from the baseline, as tune.json's candidate says."""
    candidate = next(c for c in tune["candidates"] if c["name"] == arm)
    if not candidate["differs"]:
        return "the baseline"
    return ", ".join(f"{knob} {'unset' if candidate['args'].get(knob) is None else candidate['args'][knob]}"
                     for knob in candidate["differs"])


def tune_table(tune: dict[str, Any]) -> list[str]:
    """README's table of the H200 capacity tune: every arm's row (in the tune's ranking order,
    each checked alone, so a failure names the row)."""
    rows = {row["name"]: row for row in tune["result"]["table"]}
    chosen = tune["result"]["chosen"]
    lines = ["| arm | sets (from the baseline) | agents held (N*) | goodput at 16 agents |",
             "|---|---|---|---|"]
    for arm in tune["result"]["ranking"]:
        row = rows[arm]
        name = f"`{arm}` (chosen)" if arm == chosen else f"`{arm}`"
        lines.append(f"| {name} | {_sets(tune, arm)} | {row['capacity']['text']} | "
                     f"{_share(row['good_turns'], row['judged_turns'])} |")
    return lines


def tune_chosen(tune: dict[str, Any]) -> list[str]:
    """The chosen arm's pool and the probes its bracket rests on."""
    chosen = tune["result"]["chosen"]
    row = next(r for r in tune["result"]["table"] if r["name"] == chosen)
    capacity = row["capacity"]
    met = max(n for n, ok in capacity["tested"] if ok)
    missed = min(n for n, ok in capacity["tested"] if not ok)
    return [f"The chosen arm's pool was {row['kv_tokens']:,} KV tokens",
            f"it met at {met} agents and missed at {missed}"]


def tune_costs(tune: dict[str, Any]) -> list[str]:
    """docs/tune.md: the in-situ prefill cost of the arms that admitted the agents at the
    target N, of the step budgets beside the baseline's threshold, and what the arms within
    the 5% bound held."""
    rows = tune["result"]["table"]
    target = tune["request"]["agents"]
    admitted = [r["prefill_cost"] for r in rows if r["capacity"]["lo"] >= target]
    budgets = [r["prefill_cost"] for r in rows
               if set(r["differs"]) <= {"max-num-batched-tokens"} and r["role"] != ["defaults"]
               and r["name"] != tune["result"]["reference"]]
    cheap = [r["capacity"]["hi"] for r in rows if r["prefill_cost"] <= 0.05]
    least, span = min(admitted), f"{min(budgets):.1%}-{max(budgets):.1%}".replace("%-", "-")
    return [f"paid at least {least:.1%} in situ, {span} for the step budgets beside the 1024 "
            "threshold",
            f"paid at least {least:.1%} at {target} agents ({span} for the step budgets beside "
            "the 1024 threshold",
            f"each missed the SLO at {max(cheap)} agents or fewer"]


def tune_brackets_beside_predictions(tune: dict[str, Any]) -> list[str]:
    """docs/capacity.md: the measured brackets the step-budget estimate is held against, and
    the report cell's example (the chosen arm's bracket)."""
    rows = {row["name"]: row for row in tune["result"]["table"]}
    chosen = tune["result"]["chosen"]
    return [f"{arm} (measured {rows[arm]['capacity']['text']})"
            for arm in ("agent-admission", "chunk-4096", "chunk-8192", "lpt-512")] + [
        f"`{rows[chosen]['capacity']['text']} (predicted"]


def _cliff_run(run: dict[str, Any]) -> str:
    if run["met"] and run["reuse_mean"] >= 0.9:
        return f"{run['agents']} met (reuse {run['reuse_mean']:.1%})"
    if run["met"]:
        return (f"{run['agents']} met at {run['goodput']:.1%} while evicting "
                f"(reuse {run['reuse_mean']:.1%})")
    return (f"{run['agents']} missed: {run['resource']} (reuse {run['reuse_mean']:.1%}, "
            f"goodput {run['goodput']:.1%})")


def cliff_rows(cliff: dict[str, Any]) -> list[str]:
    """docs/capacity.md's CPU cliff table: one row per workload, every run's verdict."""
    return [f"| sessions ending at {w['working_set_tokens'] / 1000:.1f}K tokens | {w['holds']} | "
            f"{w['predicted_cliff']} | {'; '.join(map(_cliff_run, w['runs']))} | "
            f"{w['measured_cliff']} | {w['error_pct']:+.1f}% |" for w in cliff["workloads"]]


def gauges_console(run: dict[str, Any]) -> list[str]:
    """docs/capacity.md: what `bench agents` printed of a run bound by max-num-seqs (its
    gauges, verdict and pool lines), rendered again from its results file."""
    from sm121.bench.scenarios.agents.models import AgentsSummary
    from sm121.bench.scenarios.agents.report import console_lines

    lines = console_lines(AgentsSummary.model_validate(run["summary"]))
    start = next(i for i, line in enumerate(lines) if line.startswith("engine gauges: "))
    return lines[start:start + 3]


def tune_fp8_rows(tune: dict[str, Any]) -> list[str]:
    """docs/capacity.md: the CPU tune that added the fp8 KV arm, a row per arm measured (in
    the order measured): its predictions before its boot and from its own, its pool, its
    bracket and the N behind it."""
    rows = {row["name"]: row for row in tune["result"]["table"]}
    chosen = tune["result"]["chosen"]
    out = []
    for arm in (c["name"] for c in tune["candidates"] if c["name"] in rows):
        row, before = rows[arm], tune["predictions"][arm]
        tested = ", ".join(f"{n} {'met' if ok else 'missed'}" for n, ok in
                           row["capacity"]["tested"])
        out.append(f"| {arm}{' (chosen)' if arm == chosen else ''} | "
                   f"{'at most ' if before['at_most'] else ''}{before['predicted']} "
                   f"({before['binding']}) / {row['predicted']} ({row['predicted_binding']}) | "
                   f"{row['kv_tokens']:,} | {row['capacity']['text']} | {tested} |")
    return out


def cold_start_brackets(tune: dict[str, Any]) -> list[str]:
    """docs/capacity.md, "The cold start": the H200 tune's brackets beside the cold start's
    bound, the arms named together where their brackets are one."""
    rows = {row["name"]: row["capacity"]["text"] for row in tune["result"]["table"]}

    def named(arms: list[str]) -> str:
        assert len({rows[a] for a in arms}) == 1, {a: rows[a] for a in arms}
        return ", ".join(arms[:-1]) + f" and {arms[-1]}"

    threshold_arms, chunk_arms = ["agent-admission", "seqs-82", "lpt-512"], ["chunk-4096",
                                                                             "chunk-8192"]
    return [f"for {named(threshold_arms)}, where they measured {rows['agent-admission']}",
            f"for {named(chunk_arms)} ({rows['chunk-4096']})"]


@dataclass(frozen=True)
class Figure:
    doc: str
    source: str  # a committed results file, from the repository's root
    render: Callable[[Any], list[str]]  # the quoted text, rendered from the file


FIGURES = [
    Figure("README.md", TUNE_H200, tune_table),
    Figure("README.md", TUNE_H200, tune_chosen),
    Figure("docs/tune.md", TUNE_H200, tune_costs),
    Figure("docs/capacity.md", TUNE_H200, tune_brackets_beside_predictions),
    Figure("docs/capacity.md", TUNE_H200, cold_start_brackets),
    Figure("docs/capacity.md", CLIFF_CPU, cliff_rows),
    Figure("docs/capacity.md", GAUGES_CPU, gauges_console),
    Figure("docs/capacity.md", TUNE_FP8_CPU, tune_fp8_rows),
]

# Passages that look like figures and are not results: goals and the notation's definition.
NOT_RESULTS: dict[tuple[str, str], str] = {
    ("docs/tune.md", "`N* >= 32` says"): "the notation, defined",
    ("docs/tune.md", "at least 32 agents at 95% goodput"): "tune's goal, not a result",
    ("docs/capacity.md", "`met at N: goodput 100%`"): "the verdict line's format",
    ("docs/capacity.md", "judged turns over the SLO (goodput 79%)"):
        "the capacity model's prediction for 24 agents, in an example of `sm121 plan`'s output",
    ("docs/agents.md", "(`verdict: met at 8: goodput 100%; predicted 10 (KV binds)`"):
        "an example of the verdict line's format",
}
# Figures measured outside this repository, quoted with their provenance in the doc.
NOT_COMMITTED: dict[tuple[str, str], str] = {
    ("README.md", "16 agents 100% of turns within the SLO (0 preemptions, reuse 96-97%); 20 "
                  "agents 87.5% (KV usage 0.99, 3 preemptions); 24 agents 25%; 32 agents 1.6%. vLLM's "
                  "defaults there: 75% at 4 agents"):
        "H100 80 GB, the project's field notes (2026-12): no results file here; the README "
        "says so beside it",
    ("README.md", "(chosen by the overlap A/B)"):
        "tiny-cpu's recipe says it (its purpose line); docs/results/cpu-testbed/NOTES.md reads "
        "the A/B, whose file records no verdict",
}


def _text(doc: str) -> str:
    """The doc with every run of whitespace one space: a quote may wrap anywhere."""
    return _flat((ROOT / doc).read_text())


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", text)


@pytest.mark.parametrize("figure", FIGURES, ids=lambda f: f"{f.doc}:{f.render.__name__}")
def test_each_quoted_figure_is_what_its_results_file_says(figure: Figure) -> None:
    assert (ROOT / figure.source).is_file(), f"{figure.source} is not in the repository"
    text = _text(figure.doc)
    for quoted in map(_flat, figure.render(results(figure.source))):
        assert quoted in text, (f"{figure.doc} does not quote {figure.source} as it is now; "
                                f"expected:\n{quoted}")


def test_every_figure_the_docs_quote_is_registered() -> None:
    unchecked = []
    for doc in DOCS:
        text = _text(doc)
        covered = [_flat(p) for f in FIGURES if f.doc == doc
                   for p in f.render(results(f.source))]
        covered += [_flat(p) for d, p in (*NOT_RESULTS, *NOT_COMMITTED) if d == doc]
        spans = [(m.start(), m.end()) for p in covered for m in re.finditer(re.escape(p), text)]
        for match in FIGURE_LIKE.finditer(text):
            if not any(a <= match.start() and match.end() <= b for a, b in spans):
                context = text[max(0, match.start() - 60):match.end() + 60]
                unchecked.append(f"{doc}: {match.group(0)!r} in ...{context}...")
    assert not unchecked, ("results figures quoted without a check (register each in "
                           "tests/unit/test_docs_figures.py FIGURES with the file it comes "
                           "from):\n" + "\n".join(unchecked))


def test_the_exceptions_are_still_in_the_docs() -> None:
    """A phrase excused above that the docs no longer hold is dropped from the lists."""
    stale = [f"{d}: {p!r}" for d, p in (*NOT_RESULTS, *NOT_COMMITTED)
             if _flat(p) not in _text(d)]
    assert not stale, stale


def test_the_check_catches_an_altered_figure() -> None:
    """The checker itself: a bracket typed differently from the file is not its rendering."""
    tune = results(TUNE_H200)
    row = tune_table(tune)[2]
    assert row.startswith("| `chunk-4096` (chosen) |") and "| 28 <= N* < 40 |" in row
    assert row in _text("README.md")
    assert row.replace("28 <= N* < 40", "32 <= N* < 40") not in _text("README.md")
    assert FIGURE_LIKE.search("t-lpt-2048 (chosen): goodput 100.0% over 3 reps, largest N 8")
