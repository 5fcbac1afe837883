"""What an agents run measured, from its raw turn records (pure, so `bench report` and `ab`
recompute it from any results file): TTFT overall and by turn, per-agent decode, prefix reuse
per turn (reused.turn_reused, the verdict's reading), goodput against the SLO, turns during
the background job, the client's own CPU."""

from __future__ import annotations

from collections import defaultdict

from sm121.bench.scenarios.agents.models import (
    AgentRow,
    AgentsRun,
    AgentsSummary,
    BackgroundSplit,
    ClientCpu,
    Percentiles,
    QueueWait,
    Reuse,
    RunMetrics,
    SessionRow,
    TurnRow,
    TurnSample,
)
from sm121.bench.scenarios.agents.reused import reports_cached, turn_reused
from sm121.bench.scenarios.agents.slo import Term, evaluate, parse_slo
from sm121.bench.stats import percentile

# key, label, format, better: the metrics an A/B compares.
HEADLINE: tuple[tuple[str, str, str, str], ...] = (
    ("goodput", "goodput (turns meeting the SLO)", "pct", "higher"),
    ("ttft_p50_s", "agent TTFT p50", "s", "lower"),
    ("ttft_p95_s", "agent TTFT p95 (all turns)", "s", "lower"),
    ("ttft_p95_judged_s", "agent TTFT p95 (turns judged by the SLO)", "s", "lower"),
    ("ttft_p99_s", "agent TTFT p99", "s", "lower"),
    ("ttft_p95_during_background_s", "agent TTFT p95 during the background prefill", "s",
     "lower"),
    ("decode_p50", "agent decode tok/s p50", "", "higher"),
    ("reuse_after_first", "prefix reuse after turn 1 (mean)", "pct", "higher"),
    ("background_ttft_s", "background job TTFT", "s", "lower"),
)


def _pcts(values: list[float]) -> Percentiles:
    return Percentiles(p50=percentile(values, 50), p95=percentile(values, 95),
                       p99=percentile(values, 99))


def _values(turns: list[TurnSample], key: str) -> list[float]:
    return [v for t in turns if (v := t.metric(key)) is not None]


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _reused(turns: list[TurnSample], reported: bool) -> list[float]:
    """What each turn reused (reused.turn_reused: a turn with no count, in a run whose engine
    reports them, at 0); the turns whose reuse is not known left out."""
    return [v for t in turns if (v := turn_reused(t, reported)) is not None]


def by_turn(turns: list[TurnSample], reported: bool | None = None) -> list[TurnRow]:
    """Turn index by turn index over the sessions; `reported`: whether the run's engine
    reports cached counts (None: some turn of `turns` has one, reused.reports_cached)."""
    known = reports_cached(turns) if reported is None else reported
    groups: dict[int, list[TurnSample]] = defaultdict(list)
    for t in turns:
        groups[t.turn].append(t)
    rows = []
    for index in sorted(groups):
        group = groups[index]
        reuse = _reused(group, known)
        ttft = _pcts(_values(group, "ttft_s"))
        rows.append(TurnRow(turn=index, n=len(group), ttft_p50_s=ttft.p50, ttft_p95_s=ttft.p95,
                            ttft_p99_s=ttft.p99, reuse_mean=_mean(reuse),
                            reuse_min=min(reuse) if reuse else None,
                            prompt_tokens_mean=_mean(_values(group, "prompt_tokens"))))
    return rows


def per_agent(turns: list[TurnSample]) -> list[AgentRow]:
    groups: dict[int, list[TurnSample]] = defaultdict(list)
    for t in turns:
        groups[t.agent].append(t)
    return [AgentRow(agent=agent, turns=len(group),
                     decode_p50=percentile(_values(group, "decode_tok_s"), 50),
                     decode_p5=percentile(_values(group, "decode_tok_s"), 5),
                     ttft_p95_s=percentile(_values(group, "ttft_s"), 95))
            for agent, group in sorted(groups.items())]


def per_session(turns: list[TurnSample], terms: list[Term], first_judged: int
                ) -> list[SessionRow]:
    """Per agent: when it started, how long its session waited to be admitted (its first
    turn's TTFT holds that wait; a gateway with session admission also says it, in
    X-Sm121-Session-Wait), and its own goodput against `terms`."""
    groups: dict[int, list[TurnSample]] = defaultdict(list)
    for t in turns:
        groups[t.agent].append(t)
    rows = []
    for agent, group in sorted(groups.items()):
        first = min(group, key=lambda t: t.submitted)
        waits = _values(group, "session_wait_s")
        judged = [t for t in group if t.turn >= first_judged]
        good = sum(all(term.meets(t.metric(term.key)) for term in terms) for t in judged)
        rows.append(SessionRow(agent=agent, start_s=first.submitted,
                               first_ttft_s=first.ttft_s,
                               session_wait_s=sum(waits) if waits else None,
                               judged=len(judged), good_turns=good,
                               goodput=good / len(judged) if judged else None))
    return rows


def overlaps_background(turn: TurnSample, background: TurnSample | None) -> bool:
    """The turn waited for its first token while the background job was in prefill."""
    if background is None or background.first_token is None:
        return False
    start, end = background.submitted, background.first_token
    first = turn.first_token or turn.finished or turn.submitted
    return turn.submitted < end and first > start


def _split(turns: list[TurnSample], background: TurnSample | None) -> BackgroundSplit | None:
    if background is None:
        return None
    during = [t for t in turns if overlaps_background(t, background)]
    outside = [t for t in turns if not overlaps_background(t, background)]
    return BackgroundSplit(prompt_tokens=background.prompt_tokens,
                           submitted=background.submitted, first_token=background.first_token,
                           ttft_s=background.ttft_s, turns_during=len(during),
                           ttft_during=_pcts(_values(during, "ttft_s")),
                           ttft_outside=_pcts(_values(outside, "ttft_s")))


def summarize_run(run: AgentsRun, slo: str | None = None) -> AgentsSummary:
    config, turns = run.config, run.turns
    first_judged = config.first_judged_turn()
    judged = [t for t in turns if t.turn >= first_judged]
    reported = reports_cached(turns)
    reuse_later = _reused([t for t in turns if t.turn > 0], reported)
    waits = _values(turns, "queue_wait_s")
    cpu = _values(turns, "client_cpu_share")
    checked_events = [t.events_match_usage for t in turns if t.events_match_usage is not None]
    terms = parse_slo(slo or config.slo)
    return AgentsSummary(
        workload=(config.workload.name if config.workload else None), agents=config.agents,
        tools_mode=config.tools_mode, turns=len(turns),
        usage_checked=sum(bool(t.usage_checked) for t in turns),
        prompt_exact=sum(bool(t.prompt_exact) for t in turns),
        events_match_usage=sum(checked_events) if checked_events else None,
        ttft=_pcts(_values(turns, "ttft_s")),
        judged_from_turn=first_judged, ttft_judged=_pcts(_values(judged, "ttft_s")),
        by_turn=by_turn(turns, reported),
        reuse_after_first=Reuse(mean=_mean(reuse_later),
                                min=min(reuse_later) if reuse_later else None),
        per_agent=per_agent(turns),
        decode_p50=percentile(_values(turns, "decode_tok_s"), 50),
        slo=evaluate(terms, judged),
        background=_split(judged, run.background),
        queue_wait=QueueWait(p50=percentile(waits, 50), p95=percentile(waits, 95))
        if waits else None,
        client_cpu=ClientCpu(share_p50=percentile(cpu, 50), share_max=max(cpu) if cpu else None,
                             cpu_s_p50=percentile(_values(turns, "client_cpu_s"), 50)),
        # only where it says something: runs through session admission, or staggered
        **({"per_session": per_session(turns, terms, first_judged)}
           if config.session_start == "stagger" or _values(turns, "session_wait_s") else {}))


def headline(run: AgentsRun) -> RunMetrics:
    """The headline metrics of one run (what an A/B compares across repetitions)."""
    summary = summarize_run(run)
    background, slo = summary.background, summary.slo
    assert slo is not None  # summarize_run always judges
    return RunMetrics(
        goodput=slo.goodput, slo_met=slo.met,
        ttft_p50_s=summary.ttft.p50, ttft_p95_s=summary.ttft.p95,
        ttft_p99_s=summary.ttft.p99, ttft_p95_judged_s=summary.ttft_judged.p95,
        ttft_p95_during_background_s=background.ttft_during.p95 if background else None,
        decode_p50=summary.decode_p50, reuse_after_first=summary.reuse_after_first.mean,
        background_ttft_s=background.ttft_s if background else None,
        background_prompt_tokens=background.prompt_tokens if background else None,
        judged_turns=slo.turns, good_turns=slo.good_turns,
        slo_terms={r.term: r.observed for r in slo.terms},
        verdict=run.capacity.line if run.capacity else None,
        verdict_resource=run.capacity.resource if run.capacity else None)

