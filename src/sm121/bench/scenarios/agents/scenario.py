"""`agents` and `replay` as `Scenario`s: chat by default, judged and reported from their
turns (`models` is their one model set; `run` and `replay` how each runs)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from sm121.bench.gauges import INTERVAL_S
from sm121.bench.report.compare import compare_with
from sm121.bench.report.format import headline_table
from sm121.bench.result_models import (
    AbEntry,
    AbResults,
    Open,
    ScenarioResults,
    ServerInfo,
    SweepResults,
    SweepSummary,
    Verdict,
)
from sm121.bench.runner import Context
from sm121.bench.scenario import Params, Results, Scenario, option
from sm121.bench.scenarios.agents import report
from sm121.bench.scenarios.agents.capacity import rejudged
from sm121.bench.scenarios.agents.choose import largest_meeting, verdict
from sm121.bench.scenarios.agents.models import (
    AgentsAb,
    AgentsSample,
    AgentsSummary,
    AgentsSweep,
    CapacityVerdict,
    RunConfig,
    RunMetrics,
    read_run,
)
from sm121.bench.scenarios.agents.params import (
    AgentRunParams,
    ReplayRunParams,
    agent_params,
    replay_params,
)
from sm121.bench.scenarios.agents.replay import ReplayArgs, replay
from sm121.bench.scenarios.agents.run import AgentsRunArgs, agents
from sm121.bench.scenarios.agents.summary import HEADLINE, headline
from sm121.bench.scenarios.agents.texts import (
    POOL_TOKENS_FLAG,
    POOL_TOKENS_HELP,
    RUN_FLAG,
    RUN_HELP,
    SLO_HELP,
    WORKLOAD_HELP,
)

_SLO = option("ttft_p95=2s", "--slo", SLO_HELP)


class AgentsParams(Params):
    agents: int = option(4, "--agents", "Concurrent agent sessions.", short="-n")
    turns: int | None = option(None, "--turns", "Turns per session (default 6).", short="-t")
    duration: float | None = option(None, "--duration", "Seconds instead of --turns: "
                                    "sessions keep taking turns until then.")
    workload: str = option("coding-agent", "--workload", WORKLOAD_HELP, short="-w")
    slo: str = _SLO
    session_start: str = option("together", "--session-start", "together: every session's "
                                "first turn goes at once; stagger: session i starts i times "
                                "the workload's mean think time later (behind a gateway with "
                                "session admission, the report shows each session's wait).")
    run: str | None = option(None, RUN_FLAG, RUN_HELP)
    pool_tokens: int | None = option(None, POOL_TOKENS_FLAG, POOL_TOKENS_HELP)
    gauges_every: float = option(INTERVAL_S, "--gauges-every", "Seconds between two reads of "
                                 "the engine's gauges during the run (KV usage, waiting and "
                                 "running requests: their peaks feed the verdict); 0: off.")


class ReplayParams(Params):
    capture_dir: Path = option(..., "capture_dir", "The folder of `sm121 gateway --capture`.",
                               argument=True)
    speed: float = option(1.0, "--speed", "Replay faster (2 = half the gaps) or slower (0.5).")
    slo: str = _SLO


class _AgentScenario(Scenario[AgentsSample, AgentsSummary]):
    sample = AgentsSample
    summary = AgentsSummary
    metrics = RunMetrics
    api = "chat"
    headline = HEADLINE

    def flatten(self, samples: list[AgentsSample]) -> RunMetrics:
        return headline(read_run(samples))

    def recompute(self, results: Results) -> Results:
        """An A/B's or sweep's headline metrics, comparison and largest N again from the raw
        turns, with this sm121's functions (a run's section recomputes from its turns)."""
        if isinstance(results, AbResults | SweepResults):
            for entry in results.samples:
                if not entry.error:
                    entry.metrics = self.flatten(entry.samples)
        if isinstance(results, AbResults):
            measured = [e for e in results.samples if not e.error]
            results.summary = compare_with(self, measured, results.params.profiles)
        if isinstance(results, SweepResults):
            largest = largest_meeting(results.samples)
            if isinstance(results.summary, SweepSummary):
                results.summary.largest_n = largest
            else:  # a sweep file from before its summary had a model
                results.summary = Open.model_validate(
                    {**results.summary.to_json(), "largest_n": largest})
        return results

    def rejudge(self, results: Results, slo: str) -> None:
        """The same raw turns judged against another SLO (`bench report --slo`): every run's
        config record carries the SLO its summary uses, and its capacity verdict is judged
        again from its records (met or missed follows the SLO)."""
        for samples, counters, server in _runs_of(results):
            for sample in samples:
                if isinstance(sample, RunConfig):
                    sample.slo = slo
            found = rejudged(read_run(samples), slo, server.cache_config, counters)
            if found is None:
                continue
            # as read from a file: every key set (read_run reads what was set, `kind` too)
            found = CapacityVerdict.model_validate(found.model_dump(mode="json"))
            samples[:] = [found if isinstance(s, CapacityVerdict) else s for s in samples]
            if isinstance(results, ScenarioResults) and isinstance(results.summary,
                                                                  AgentsSummary):
                results.summary.capacity = found  # a run's section prints the stored one
        if isinstance(results, SweepResults):
            if isinstance(results.summary, SweepSummary):
                results.summary.slo = slo
            else:
                results.summary = Open.model_validate({**results.summary.to_json(), "slo": slo})

    def plots(self, results: Results, out: Path, stem: str) -> list[Path]:
        """The PNGs of an agents or replay run, an A/B of them or a sweep."""
        if isinstance(results, AbResults):
            return report.ab_plots(cast(AgentsAb, results), out, stem)
        if isinstance(results, SweepResults):
            return report.sweep_plots(cast(AgentsSweep, results), out, stem)
        return report.run_plots(read_run(results.samples).bars, out, stem)

    def section(self, results: Results, files: list[Path]) -> list[str] | None:
        """The headline table, then the run, A/B or sweep in detail."""
        head = headline_table(results)
        if isinstance(results, AbResults):
            return head + report.ab_section(cast(AgentsAb, results), files)
        if isinstance(results, SweepResults):
            return head + report.sweep_section(cast(AgentsSweep, results), files)
        return head + report.run_section(read_run(results.samples), results.summary, files)

    def across(self, runs: list[Results]) -> list[str]:
        return report.timestamp_ratio(runs)

    def console(self, summary: AgentsSummary) -> list[str]:
        """A run's terminal summary; none while the run has no verdict yet."""
        if summary.slo is None:
            return []
        return report.console_lines(summary)


def _runs_of(results: Results
             ) -> list[tuple[list[Any], Mapping[str, int | float] | None, ServerInfo]]:
    """Each run of a results file: its samples (changed in place), the engine counter deltas
    its stored summary kept (an A/B entry's, or the file's for one run; a sweep keeps no
    summary) and the server it ran on."""
    if isinstance(results, ScenarioResults):
        return [(results.samples, _counters(results.summary), results.server)]
    if isinstance(results, AbResults):
        return [(e.samples, _counters(e.summary), e.server) for e in results.samples
                if not e.error]
    return [(e.samples, None, results.server) for e in results.samples if not e.error]


def _counters(summary: object) -> Mapping[str, int | float] | None:
    """A stored summary's engine counter deltas; None where it kept none."""
    found = summary.to_json().get("engine_metrics") if isinstance(summary, Open) else None
    return found if isinstance(found, dict) else None


class Agents(_AgentScenario):
    name = "agents"
    help = ("N concurrent coding-agent sessions, each on its own clock: append-only multi-turn "
            "chat with tools, exact token sizes, per-turn TTFT, decode, prefix reuse and "
            "goodput against the SLO. Results are written as turns end (Ctrl-C keeps them).")
    params = AgentsParams

    async def run(self, ctx: Context, params: Params) -> AgentsSummary:
        return await agents(ctx, AgentsRunArgs.model_validate(params.given()))

    def prepare(self, values: Params) -> AgentRunParams:
        assert isinstance(values, AgentsParams)
        return agent_params(values.agents, values.turns, values.duration, values.workload,
                            values.slo, values.session_start, values.run, values.pool_tokens,
                            values.gauges_every)

    def verdict(self, entries: list[AbEntry[AgentsSample, Any]], profiles: list[str]
                ) -> Verdict:
        return verdict(entries, profiles)


class Replay(_AgentScenario):
    name = "replay"
    help = ("Replay a gateway capture: sessions keyed by the gateway's session id, each in its "
            "original order with the original inter-arrival gaps (over --speed). A redacted "
            "capture replays with text regenerated to the captured token lengths.")
    params = ReplayParams
    api_option = False

    async def run(self, ctx: Context, params: Params) -> AgentsSummary:
        return await replay(ctx, ReplayArgs.model_validate(params.given()))

    def prepare(self, values: Params) -> ReplayRunParams:
        assert isinstance(values, ReplayParams)
        return replay_params(values.capture_dir, values.speed, values.slo)
