"""Report pieces for agent runs (agents, replay, an A/B of profiles, a sweep over N): the
Markdown section with plots, the terminal summary, and the timestamp-first ratio. Every
number is recomputed from the raw turn records, so a results file is its own evidence."""

from __future__ import annotations

from pathlib import Path

from sm121.bench.report.format import fmt, md
from sm121.bench.report.format import markdown_table as _table
from sm121.bench.report.sections import images
from sm121.bench.result_models import ScenarioResults
from sm121.bench.scenario import Results
from sm121.bench.scenarios.agents import plots
from sm121.bench.scenarios.agents.models import (
    AgentsAb,
    AgentsAbEntry,
    AgentsRun,
    AgentsSummary,
    AgentsSweep,
    CapacityVerdict,
    Percentiles,
    RunMetrics,
    SessionRow,
    TurnRow,
    TurnSample,
    bars,
    read_run,
)
from sm121.bench.scenarios.agents.summary import summarize_run
from sm121.display_markdown import inert
from sm121.engines.registry import metric_names
from sm121.recipes.schema import ArgValue


def _ttft(p: Percentiles) -> list[str]:
    return [fmt(p.p50, "s"), fmt(p.p95, "s"), fmt(p.p99, "s")]


def _judged(s: AgentsSummary) -> str:
    first = s.judged_from_turn
    return "all turns" if not first else f"turns {first + 1}+ (a session's first turn is its " \
        "cold start-up prefill, shown apart)"


def summary_lines(s: AgentsSummary) -> list[str]:
    """The run in Markdown: verdict, TTFT, by turn, per agent, background, engine, client."""
    slo = s.slo
    if slo is None:  # a run cut short: no verdict
        return []
    lines = [f"Workload **{inert(s.workload)}**, {s.agents} agents, {s.turns} turns; "
             f"tools: {inert(s.tools_mode)}. Usage cross-check held on {s.usage_checked}/"
             f"{s.turns} turns; prompt exact to the token on {s.prompt_exact}/"
             f"{s.turns}.", "",
             f"Goodput **{fmt(slo.goodput, 'pct')}** ({slo.good_turns}/{slo.turns} "
             f"turns meet every term of {inert(slo.slo, code=True)}); SLO "
             f"{'**met**' if slo.met else '**not met**'}. Judged: {_judged(s)}.", ""]
    lines += _table(["SLO term", "observed", "met", "turns meeting"], [
        [inert(r.term), fmt(r.observed), "yes" if r.met else "no", str(r.turns_meeting)]
        for r in slo.terms])
    lines += _table(["TTFT (agent turns)", "p50", "p95", "p99"], [
        ["all turns", *_ttft(s.ttft)], ["judged by the SLO", *_ttft(s.ttft_judged)]])
    lines += _table(["turn", "n", "TTFT p50", "p95", "p99", "reuse mean", "reuse min",
                     "prompt tokens"], [
        [str(r.turn + 1), str(r.n), fmt(r.ttft_p50_s, "s"), fmt(r.ttft_p95_s, "s"),
         fmt(r.ttft_p99_s, "s"), fmt(r.reuse_mean, "pct"), fmt(r.reuse_min, "pct"),
         fmt(r.prompt_tokens_mean, "int")] for r in s.by_turn])
    lines += _table(["agent", "turns", "decode tok/s p50", "decode p5", "TTFT p95"], [
        [str(a.agent), str(a.turns), fmt(a.decode_p50), fmt(a.decode_p5),
         fmt(a.ttft_p95_s, "s")] for a in s.per_agent])
    if s.per_session:
        lines += ["Per session (the gateway's session admission: who waited, and each "
                  "session's own goodput):", ""]
        lines += _table(["agent", "started", "first TTFT (holds any wait)", "session wait",
                         "good / judged", "goodput"], [
            [str(r.agent), fmt(r.start_s, "s"), fmt(r.first_ttft_s, "s"),
             fmt(r.session_wait_s, "s"), f"{fmt(r.good_turns, 'int')} / "
             f"{fmt(r.judged, 'int')}", fmt(r.goodput, "pct")] for r in s.per_session])
    background = s.background
    if background:
        lines += [f"Background job: {fmt(background.prompt_tokens, 'int')} prompt tokens, "
                  f"TTFT {fmt(background.ttft_s, 's')}; {background.turns_during} agent "
                  "turns waited for their first token during its prefill.", ""]
        lines += _table(["agent turns", "TTFT p50", "p95", "p99"], [
            ["judged turns during the background prefill", *_ttft(background.ttft_during)],
            ["judged turns outside it", *_ttft(background.ttft_outside)]])
    if s.queue_wait:
        lines += [f"Gateway queue wait: p50 {fmt(s.queue_wait.p50, 's')}, p95 "
                  f"{fmt(s.queue_wait.p95, 's')}.", ""]
    cpu = s.client_cpu
    lines += [f"Bench client CPU during a turn (share of one core, whole client): p50 "
              f"{fmt(cpu.share_p50, 'pct')}, max {fmt(cpu.share_max, 'pct')}.", ""]
    return lines


def _engine_lines(extras: AgentsSummary) -> list[str]:
    deltas = extras.engine_metrics
    if not deltas:
        return []
    return ["Engine /metrics deltas over the run: " + ", ".join(
        f"{inert(_short(k), code=True)} {fmt(v, 'int') if v >= 10 else fmt(v)}"
        for k, v in deltas.items()) + f"; prefix-cache hit rate "
        f"{fmt(extras.prefix_reuse_metrics, 'pct')}.", ""]


def _gauge_lines(run: AgentsRun, stored: AgentsSummary) -> list[str]:
    """The engine's gauges over the run: their peaks (runs measured before: nothing)."""
    gauges = run.gauges or stored.gauges
    if gauges is None:
        return []
    return [f"Engine gauges over the run: {inert(gauges.line())}.", ""]


def _short(metric: str) -> str:
    """A metric name without its engine's namespace, for a readable line."""
    for namespace in metric_names().namespaces:
        metric = metric.removeprefix(namespace)
    return metric


def _replay_lines(extras: AgentsSummary) -> list[str]:
    gaps = extras.gaps
    if not gaps:
        return []
    return [f"Replay: {extras.sessions} sessions; {gaps.gaps} inter-arrival gaps, "
            f"{gaps.within_10pct} within 10% of the original (over --speed); relative "
            f"error median {fmt(gaps.median_rel_error, 'pct')}, max "
            f"{fmt(gaps.max_rel_error, 'pct')}" + (
                f", {gaps.held} held by their session's previous answer (the engine slower "
                "than at capture)" if gaps.held else "") +
            f"; latest start {fmt(extras.late_max_s, 's')} after its scheduled time.", ""]


def run_plots(bars: list[TurnSample], out: Path, stem: str) -> list[Path]:
    """The PNGs of one agents or replay run, from its turns and background job."""
    groups: plots.Groups = {stem: bars}
    return [plots.timeline(groups, out / f"{stem}-timeline.png"),
            plots.ttft_cdf(groups, out / f"{stem}-ttft-cdf.png"),
            plots.reuse_per_turn(groups, out / f"{stem}-reuse.png")]


def run_section(run: AgentsRun, stored: AgentsSummary, files: list[Path]) -> list[str]:
    """One run in detail: recomputed from its turns, plus what its stored summary adds (the
    engine's deltas, a replay's gaps)."""
    verdict = [f"**Verdict**: {inert(stored.capacity.line)} (docs/capacity.md)"
               + "".join(f"; {inert(line)}" for line in _pool_line(stored.capacity)) + ".",
               ""] if stored.capacity is not None else []
    return [*verdict, *summary_lines(summarize_run(run)), *_engine_lines(stored),
            *_gauge_lines(run, stored), *_replay_lines(stored), *images(files), ""]


def ab_groups(entries: list[AgentsAbEntry], profiles: list[str]) -> dict[str, plots.Groups]:
    """One run per profile for the timeline (the first measured rep), all reps for the CDF."""
    first: plots.Groups = {}
    every: plots.Groups = {p: [] for p in profiles}
    for entry in entries:
        if entry.error:
            continue
        turns = bars(entry)
        first.setdefault(entry.profile, turns)
        every[entry.profile].extend(turns)
    return {"first": first, "every": every}


def ab_plots(ab: AgentsAb, out: Path, stem: str) -> list[Path]:
    groups = ab_groups(ab.samples, ab.profiles())
    return [plots.timeline(groups["first"], out / f"{stem}-timeline.png"),
            plots.ttft_cdf(groups["every"], out / f"{stem}-ttft-cdf.png"),
            plots.reuse_per_turn(groups["every"], out / f"{stem}-reuse.png")]


def ab_section(ab: AgentsAb, files: list[Path]) -> list[str]:
    verdict = ab.verdict()
    lines = [f"**Best profile by goodput: {inert(verdict.best)}**. {inert(verdict.why)}", ""] \
        if verdict else []
    rows = []
    entries = ab.samples
    for entry in entries:
        if entry.error:
            rows.append([inert(entry.profile), str(entry.rep + 1), "failed", "-", "-", "-", "-",
                         "-", "-"])
            continue
        m = entry.metrics
        rows.append([inert(entry.profile), str(entry.rep + 1), fmt(m.goodput, "pct"),
                     fmt(m.ttft_p50_s, "s"), fmt(m.ttft_p95_s, "s"),
                     fmt(m.ttft_p95_judged_s, "s"), fmt(m.ttft_p95_during_background_s, "s"),
                     fmt(m.background_ttft_s, "s"), _verdict(m)])
    judged = any(not e.error and e.metrics.verdict for e in entries)
    if not judged:  # runs measured before the verdict existed: the table as it was
        rows = [r[:-1] for r in rows]
    lines += ["Per repetition (in run order):", ""]
    lines += _table(["profile", "rep", "goodput", "TTFT p50", "TTFT p95 (all)",
                     "TTFT p95 (judged)", "judged TTFT p95 during background",
                     "background TTFT"] + (["verdict (docs/capacity.md)"] if judged else []),
                    rows)
    lines += [f"Failed: rep {e.rep + 1} {inert(e.profile)}: {inert(e.error)}"
              for e in entries if e.error]
    served: dict[str, dict[str, ArgValue]] = {}
    for entry in entries:
        if not entry.error:
            served.setdefault(entry.profile, entry.engine_args or {})
    lines += ["", "Engine args per profile (as served by sm121):", ""] + [
        f"- {inert(p, code=True)}: " + inert(", ".join(
            f"{k}={v}" for k, v in args.items()
            if k.startswith(("max-num", "long-prefill", "tool"))))
        for p, args in served.items()]
    return lines + [""] + images(files) + [""]


def _verdict(m: RunMetrics) -> str:
    """A run's capacity verdict in a table cell (runs measured before it existed: "-")."""
    return inert(m.verdict.split(";")[0]) if m.verdict else "-"


def _points(sweep: AgentsSweep) -> list[tuple[int, RunMetrics]]:
    """(N, that run's headline metrics) per measured N of a sweep."""
    return [(e.agents, e.metrics) for e in sweep.samples if not e.error]


def sweep_plots(sweep: AgentsSweep, out: Path, stem: str) -> list[Path]:
    return [plots.knee(_points(sweep), out / f"{stem}-knee.png")]


def sweep_section(sweep: AgentsSweep, files: list[Path]) -> list[str]:
    points, held = _points(sweep), sweep.held()
    # a file written before the sweep judged its N has no such key
    largest = md(held.get("largest_n"))
    lines = [f"Largest N meeting {inert(held.get('slo'), code=True)}: **{largest}**.", ""]
    judged = any(p.verdict for _, p in points)  # else a sweep from before the verdict
    lines += _table(["N", "goodput", "SLO met", "TTFT p50", "TTFT p95", "decode p50"]
                    + (["verdict (docs/capacity.md)"] if judged else []), [
        [str(n), fmt(p.goodput, "pct"), "yes" if p.slo_met else "no",
         fmt(p.ttft_p50_s, "s"), fmt(p.ttft_p95_s, "s"), fmt(p.decode_p50)]
        + ([_verdict(p)] if judged else []) for n, p in points])
    return lines + images(files) + [""]


def timestamp_ratio(runs: list[Results]) -> list[str]:
    """Per-turn TTFT of timestamp-first over coding-agent (the field's 39.6x), when a report
    holds one run of each."""
    def by_turn(summary: AgentsSummary) -> dict[int, TurnRow]:
        return {r.turn: r for r in summary.by_turn if r.ttft_p50_s}

    summaries = [summarize_run(read_run(r.samples)) for r in runs
                 if isinstance(r, ScenarioResults)
                 and any(getattr(s, "kind", None) == "turn" for s in r.samples)]
    named = {s.workload: s for s in summaries}
    if "coding-agent" not in named or "timestamp-first" not in named:
        return []
    clean, stamped = by_turn(named["coding-agent"]), by_turn(named["timestamp-first"])
    rows = [[str(t + 1), fmt(clean[t].ttft_p50_s, "s"), fmt(stamped[t].ttft_p50_s, "s"),
             fmt(_ratio(stamped[t].ttft_p50_s, clean[t].ttft_p50_s), "x"),
             fmt(clean[t].reuse_mean, "pct"), fmt(stamped[t].reuse_mean, "pct"),
             f"{fmt(clean[t].prompt_tokens_mean, 'int')} / "
             f"{fmt(stamped[t].prompt_tokens_mean, 'int')}"]
            for t in sorted(set(clean) & set(stamped))]
    return ["## timestamp-first vs coding-agent", "",
            "Median TTFT per turn over the agents; the ratio is what a mutating field at the "
            "top of the prompt costs per turn (the field report: 39.6x on DS4). Turn 1 is cold "
            "in both.", "",
            *_table(["turn", "coding-agent TTFT", "timestamp-first TTFT", "ratio",
                     "reuse (coding-agent)", "reuse (timestamp-first)", "prompt tokens"], rows)]


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def console_lines(summary: AgentsSummary) -> list[str]:
    slo, ttft, reuse = summary.slo, summary.ttft, summary.reuse_after_first
    if slo is None:  # a run cut short: no verdict
        return []
    lines = [f"{summary.workload}: {summary.agents} agents, {summary.turns} "
             f"turns (usage cross-check {summary.usage_checked}/{summary.turns}, tools "
             f"{summary.tools_mode})",
             f"TTFT p50 {fmt(ttft.p50, 's')}, p95 {fmt(ttft.p95, 's')}, p99 "
             f"{fmt(ttft.p99, 's')} (judged turns: p95 "
             f"{fmt(summary.ttft_judged.p95, 's')}); decode p50 "
             f"{fmt(summary.decode_p50)} tok/s; reuse "
             f"after turn 1: mean {fmt(reuse.mean, 'pct')}, min {fmt(reuse.min, 'pct')}",
             f"goodput {fmt(slo.goodput, 'pct')} against {slo.slo} over "
             f"{_judged(summary).split(' (')[0]}: SLO "
             f"{'met' if slo.met else 'not met'} (" + ", ".join(
                 f"{r.term}: {fmt(r.observed)}" for r in slo.terms) + ")"]
    background = summary.background
    if background:
        lines.append(f"background job: TTFT {fmt(background.ttft_s, 's')}; judged agent "
                     f"TTFT p95 during its prefill {fmt(background.ttft_during.p95, 's')}, "
                     f"outside {fmt(background.ttft_outside.p95, 's')}")
    if summary.gauges is not None:
        lines.append(f"engine gauges: {summary.gauges.line()}")
    if summary.capacity is not None:
        lines += [f"verdict: {summary.capacity.line}", *_pool_line(summary.capacity)]
    return lines + session_lines(summary)


def _pool_line(verdict: CapacityVerdict) -> list[str]:
    """Where the prediction's pool came from (a verdict of a run with no pool: nothing)."""
    if verdict.pool_tokens is None:
        return []
    return [f"KV pool {verdict.pool_tokens:,} tokens, from {verdict.pool_source or 'the engine'}"]


AT_ONCE_S = 0.01


def session_lines(summary: AgentsSummary) -> list[str]:
    """Per session, what the gateway's session admission did: who waited, how long, and the
    goodput of the sessions that waited against those that did not."""
    rows = summary.per_session or []
    # Under 10 ms is an admission at once: the gateway's own bookkeeping (a gateway before
    # this one reported its microseconds, not 0).
    waited = [a for a in rows if (a.session_wait_s or 0) >= AT_ONCE_S]
    if not any(a.session_wait_s is not None for a in rows):
        return []
    if not waited:
        return [f"session admission: all {len(rows)} sessions admitted at once"]
    at_once = [a for a in rows if a not in waited]

    def goodput(group: list[SessionRow]) -> str:
        good = sum(a.good_turns or 0 for a in group)
        judged = sum(a.judged or 0 for a in group)
        return f"{good}/{judged}" if judged else "-"

    longest = max(a.session_wait_s or 0.0 for a in waited)
    return [f"session admission: {len(waited)} of {len(rows)} sessions waited (longest "
            f"{fmt(longest, 's')}); good turns: admitted at once {goodput(at_once)}, "
            f"waited {goodput(waited)}"]
