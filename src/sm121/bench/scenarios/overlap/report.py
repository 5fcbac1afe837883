"""The report of `overlap`: its metrics recomputed from the raw samples, the headline table,
one row per repetition, the boot effect, the plots (decode timeline, gaps, admission) and
the engine args per profile."""

from __future__ import annotations

from pathlib import Path

from sm121.bench.boot_effect import describe
from sm121.bench.report.compare import compare_with
from sm121.bench.report.format import fmt, headline_table, markdown_table
from sm121.bench.report.sections import images, measured
from sm121.bench.result_models import AbEntry, AbResults, AbSummary, Open, ScenarioResults
from sm121.bench.scenario import Results
from sm121.bench.scenarios import get
from sm121.bench.scenarios.overlap.metrics import overlap_metrics, summarize_reps
from sm121.bench.scenarios.overlap.models import OverlapSample
from sm121.bench.scenarios.overlap.plots import (
    OverlapGroups,
    admission,
    decode_timeline,
    gap_distribution,
)
from sm121.display_markdown import inert
from sm121.recipes.schema import ArgValue

WINDOWS_NOTE = (
    "Windows: the *client* window runs from the long request's submission to its first token;"
    " the *engine* window starts at the first long gap in the ongoing stream, found as the "
    "knee of its delivered-token curve (the engine began the prefill; before that the API "
    "server was tokenising, or flushing output it had fallen behind on, and the stream decoded "
    "undisturbed). **Headline metrics use the engine window**; decode tokens and share are "
    "given for both. Decode share = decode rate in the window / rate before it on the same "
    "stream. Gaps are clipped to the window. A repetition counts only when the ongoing stream "
    "outlived the window, the long prompt had exactly L tokens (usage cross-check) and a "
    "baseline existed; a short request counts only when it was sent inside the engine window. "
    "Decode metrics (share, tokens, gaps) count only from repetitions whose stream arrived as "
    "it was generated: a baseline of at least half the before-time without a stall over 1 s, "
    "and no burst inside the engine window above half a second of undisturbed decode (a "
    "starved API server flushing backlog); the n in each cell says how many repetitions "
    "qualified.")
RUN = "-"  # the profile of a run's repetitions (a run has none): a table cell as it is


def recompute_overlap(results: Results) -> Results:
    """Metrics again from the raw samples, with this sm121's metric functions (they are pure,
    so an improved window detector applies to results measured before it)."""
    spec = get("overlap")
    if isinstance(results, AbResults):
        entries = measured(results)
        for entry in entries:
            for sample in entry.samples:
                sample.metrics = overlap_metrics(sample)
            entry.metrics = spec.headline_metrics(entry.samples)
        results.summary = compare_with(spec, entries, results.params.profiles)
    elif isinstance(results, ScenarioResults):
        for sample in results.samples:
            sample.metrics = overlap_metrics(sample)
        results.summary = summarize_reps([s.metrics for s in results.samples])
    return results


def _entries(results: Results) -> list[AbEntry[OverlapSample, Open]]:
    """The repetitions of a run or of an A/B's measured entries: a run's sample is an entry
    of profile RUN."""
    if isinstance(results, AbResults):
        return measured(results)
    if isinstance(results, ScenarioResults):  # RUN is a table cell, not a profile's name
        return [AbEntry[OverlapSample, Open].model_construct(
                    profile=RUN, rep=s.rep, samples=[s], metrics=Open()) for s in results.samples]
    return []  # overlap has no sweep


def _overlap_groups(kind: str, entries: list[AbEntry[OverlapSample, Open]], profiles: list[str],
                    label: str) -> OverlapGroups:
    if kind == "ab":
        groups: OverlapGroups = {p: [] for p in profiles}
        for entry in entries:
            groups[entry.profile].extend(entry.samples)
        return groups
    return {label: [s for entry in entries for s in entry.samples]}


def overlap_plots(results: Results, out: Path, stem: str) -> list[Path]:
    profiles = results.params.profiles if isinstance(results, AbResults) else []
    label = results.label or results.server.url or "run"
    groups = _overlap_groups(results.kind, _entries(results), profiles, label)
    return [decode_timeline(groups, out / f"{stem}-decode-timeline.png"),
            gap_distribution(groups, out / f"{stem}-gaps.png"),
            admission(groups, out / f"{stem}-admission.png")]


def _rep_rows(entries: list[AbEntry[OverlapSample, Open]]) -> tuple[list[str], list[list[str]]]:
    headers = ["profile", "rep", "order", "valid", "share (engine)", "share (client)",
               "decode tok (engine)", "decode tok (client)", "p95 gap", "prefill tok/s",
               "short TTFT", "admission"]
    rows = []
    for index, entry in enumerate(entries):
        for sample in entry.samples:
            m = sample.metrics
            retry = " (retry)" if sample.attempt else ""
            name = RUN if entry.profile == RUN else inert(entry.profile)
            rows.append([name, f"{entry.rep + 1}{retry}", str(index + 1),
                         "yes" if m.valid else "no", fmt(m.decode_share, "pct"),
                         fmt(m.decode_share_client, "pct"), fmt(m.decode_tokens, "int"),
                         fmt(m.decode_tokens_client, "int"), fmt(m.gap_p95, "s"),
                         fmt(m.prefill_tok_s, "int"), fmt(m.short_ttft_s, "s"),
                         fmt(m.admission_ratio, "x")])
    return headers, rows


def overlap_section(results: Results, files: list[Path]) -> list[str]:
    entries = _entries(results)
    lines = [WINDOWS_NOTE, "", *headline_table(results)]
    lines += ["Per repetition (order = run order; the profile order alternates between boots):",
              "", *markdown_table(*_rep_rows(entries))]
    effect = results.summary.boot_effect if isinstance(results.summary, AbSummary) else None
    if effect:
        lines += ["Later repetitions on a boot against its first (the prefix cache is salted "
                  "away between them; a sign test per metric):", "",
                  *[f"- {line}" for line in describe(effect)], ""]
    lines += images(files) + [""]
    if isinstance(results, AbResults):
        lines += ["Engine args per profile (as served by sm121):", ""]
        seen: dict[str, dict[str, ArgValue]] = {}
        for entry in entries:
            seen.setdefault(entry.profile, entry.engine_args)
        failed = [e for e in results.samples if e.error]
        lines += [f"Failed and re-run: rep {e.rep + 1} {inert(e.profile)}: {inert(e.error)}"
                  for e in failed] + ([""] if failed else [])
        lines += [f"- {inert(p, code=True)}: " + inert(", ".join(
            f"{k}={v}" for k, v in args.items() if k.startswith(("max-num", "long-prefill"))))
                  for p, args in seen.items()] + [""]
    return lines
