"""`agents` and `replay` as `Scenario`s, over the functions of `sm121.bench.agents`: chat by
default, judged and reported from their turns."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sm121.bench import result_models
from sm121.bench.agents import report
from sm121.bench.agents.choose import verdict
from sm121.bench.agents.entries import AbEntry
from sm121.bench.agents.params import agent_params, replay_params
from sm121.bench.agents.records import read_run
from sm121.bench.agents.replay import ReplayArgs, replay
from sm121.bench.agents.results_view import read_ab, read_sweep
from sm121.bench.agents.scenario import AgentsRunArgs, agents
from sm121.bench.agents.summary import HEADLINE, headline
from sm121.bench.agents.summary_model import AgentsSummary, RunExtras, RunMetrics, RunOutcome
from sm121.bench.report.format import markdown_table, table_rows
from sm121.bench.runner import Context
from sm121.bench.scenario import Params, Record, Scenario, option
from sm121.bench.scenarios.agents import models
from sm121.bench.scenarios.agents.texts import SLO_HELP, WORKLOAD_HELP

_SLO = option("ttft_p95=2s", "--slo", SLO_HELP)


class AgentsParams(Params):
    agents: int = option(4, "--agents", "Concurrent agent sessions.", short="-n")
    turns: int | None = option(None, "--turns", "Turns per session (default 6).", short="-t")
    duration: float | None = option(None, "--duration", "Seconds instead of --turns: "
                                    "sessions keep taking turns until then.")
    workload: str = option("coding-agent", "--workload", WORKLOAD_HELP, short="-w")
    slo: str = _SLO


class ReplayParams(Params):
    capture_dir: Path = option(..., "capture_dir", "The folder of `sm121 gateway --capture`.",
                               argument=True)
    speed: float = option(1.0, "--speed", "Replay faster (2 = half the gaps) or slower (0.5).")
    slo: str = _SLO


def _stored(outcome: RunOutcome) -> models.AgentsSummary:
    """The summary as the results file keeps it: the run's, then the extras it set."""
    extras = outcome.extras
    return models.AgentsSummary.model_validate(
        {**outcome.summary.model_dump(), **extras.model_dump(include=extras.model_fields_set)})


class _AgentScenario(Scenario[models.AgentsSample, models.AgentsSummary]):
    sample = models.AgentsSample
    summary = models.AgentsSummary
    api = "chat"
    headline = HEADLINE

    def flatten(self, samples: list[models.AgentsSample]) -> RunMetrics:
        return headline(read_run([s.to_json() for s in samples]))

    def recompute(self, data: Record) -> Record:
        report.recompute(data)
        return data

    def rejudge(self, data: Record, slo: str) -> None:
        report.rejudge(data, slo)

    # The hooks below get the results file as read (the JSON edge): each reads it into the
    # typed views once and hands those on.
    def plots(self, data: Record, out: Path, stem: str) -> list[Path]:
        """The PNGs of an agents or replay run, an A/B of them or a sweep."""
        if data["kind"] == "ab":
            return report.ab_plots(read_ab(data), out, stem)
        if data["kind"] == "sweep":
            return report.sweep_plots(read_sweep(data), out, stem)
        return report.run_plots(read_run(data["samples"]).bars, out, stem)

    def section(self, data: Record, files: list[Path]) -> list[str] | None:
        """The headline table, then the run, A/B or sweep in detail."""
        head = markdown_table(*table_rows(data))
        if data["kind"] == "ab":
            return head + report.ab_section(read_ab(data), files)
        if data["kind"] == "sweep":
            return head + report.sweep_section(read_sweep(data), files)
        extras = RunExtras.model_validate(data.get("summary") or {})
        return head + report.run_section(read_run(data["samples"]), extras, files)

    def console(self, summary: Record) -> list[str]:
        """A run's terminal summary; none while the run has no verdict yet."""
        if not summary.get("slo"):
            return []
        return report.console_lines(AgentsSummary.model_validate(summary))


class Agents(_AgentScenario):
    name = "agents"
    help = ("N concurrent coding-agent sessions, each on its own clock: append-only multi-turn "
            "chat with tools, exact token sizes, per-turn TTFT, decode, prefix reuse and "
            "goodput against the SLO. Results are written as turns end (Ctrl-C keeps them).")
    params = AgentsParams

    async def run(self, ctx: Context, params: Params) -> models.AgentsSummary:
        return _stored(await agents(ctx, AgentsRunArgs.model_validate(params.given())))

    def prepare(self, values: Params) -> Record:
        assert isinstance(values, AgentsParams)
        return agent_params(values.agents, values.turns, values.duration, values.workload,
                            values.slo).model_dump()

    def verdict(self, entries: list[result_models.AbEntry[Any]], profiles: list[str]
                ) -> result_models.Verdict:
        # The agents code reads its A/B entries in its own model (`agents.entries`).
        runs = [AbEntry.model_validate(e.to_json()) for e in entries]
        return result_models.Verdict.model_validate(verdict(runs, profiles).model_dump())


class Replay(_AgentScenario):
    name = "replay"
    help = ("Replay a gateway capture: sessions keyed by the gateway's session id, each in its "
            "original order with the original inter-arrival gaps (over --speed). A redacted "
            "capture replays with text regenerated to the captured token lengths.")
    params = ReplayParams
    api_option = False

    async def run(self, ctx: Context, params: Params) -> models.AgentsSummary:
        return _stored(await replay(ctx, ReplayArgs.model_validate(params.given())))

    def prepare(self, values: Params) -> Record:
        assert isinstance(values, ReplayParams)
        return replay_params(values.capture_dir, values.speed, values.slo).model_dump()
