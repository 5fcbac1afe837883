"""`agents` and `replay` as `Scenario`s, over the functions of `sm121.bench.agents`: chat by
default, judged and reported from their turns."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sm121.bench.agents import report
from sm121.bench.agents.choose import verdict
from sm121.bench.agents.params import agents_params, replay_params
from sm121.bench.agents.replay import replay
from sm121.bench.agents.scenario import agents
from sm121.bench.agents.summary import HEADLINE, flatten
from sm121.bench.runner import Context
from sm121.bench.scenario import Params, Record, Scenario, option
from sm121.bench.scenarios.agents.models import AgentsSample, AgentsSummary
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


class _AgentScenario(Scenario[AgentsSample, AgentsSummary]):
    sample = AgentsSample
    summary = AgentsSummary
    api = "chat"
    headline = HEADLINE

    def flatten(self, samples: list[Record]) -> Record:
        return flatten(samples)

    def recompute(self, data: Record) -> Record:
        return report.recompute(data)

    def rejudge(self, data: Record, slo: str) -> None:
        report.rejudge(data, slo)

    def plots(self, data: Record, out: Path, stem: str) -> list[Path]:
        return report.plots_of(data, out, stem)

    def section(self, data: Record, files: list[Path]) -> list[str] | None:
        return report.section(data, files)

    def console(self, summary: Record) -> list[str]:
        return report.console(summary)


class Agents(_AgentScenario):
    name = "agents"
    help = ("N concurrent coding-agent sessions, each on its own clock: append-only multi-turn "
            "chat with tools, exact token sizes, per-turn TTFT, decode, prefix reuse and "
            "goodput against the SLO. Results are written as turns end (Ctrl-C keeps them).")
    params = AgentsParams

    async def run(self, ctx: Context, params: Params) -> AgentsSummary:
        return AgentsSummary.model_validate(await agents(ctx, params.given()))

    def prepare(self, values: Params) -> Record:
        return agents_params(values.model_dump())

    def verdict(self, samples: list[Record], profiles: list[str]) -> Any:
        return verdict(samples, profiles)


class Replay(_AgentScenario):
    name = "replay"
    help = ("Replay a gateway capture: sessions keyed by the gateway's session id, each in its "
            "original order with the original inter-arrival gaps (over --speed). A redacted "
            "capture replays with text regenerated to the captured token lengths.")
    params = ReplayParams
    api_option = False

    async def run(self, ctx: Context, params: Params) -> AgentsSummary:
        return AgentsSummary.model_validate(await replay(ctx, params.given()))

    def prepare(self, values: Params) -> Record:
        return replay_params(values.model_dump())
