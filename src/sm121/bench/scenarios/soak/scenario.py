"""`soak` as a `Scenario`: N agents for a duration against the runner's target, every
interval a line in a JSONL file beside the results file (`<results>.jsonl`), and the soak's
summary as the run's summary. Its own command (`sm121 bench soak`, in cli/) adds what a run
of hours wants and a scenario run has not: --resume of the JSONL file, and the process watch
of a local run (its engine's process group and /metrics behind a gateway)."""

from __future__ import annotations

from pydantic import BaseModel, field_validator

from sm121.bench.context import Context
from sm121.bench.result_models import Open
from sm121.bench.scenario import Params, Scenario, option
from sm121.bench.scenarios.soak.records import SoakSummary
from sm121.bench.scenarios.soak.runner import SoakRequest, run_soak
from sm121.durations import parse_duration

_WORKLOAD = ("coding-agent (bench agents' sessions, fitted to the engine's context) or "
             "chat-loop (a plain multi-turn chat).")


class SoakScenarioParams(Params):
    workload: str = option("coding-agent", "--workload", _WORKLOAD)
    agents: int = option(4, "--agents", "Concurrent agents.")
    duration: str = option("10m", "--duration", "How long: 72h, 30m, 90s, 1d2h.")
    report_every: str = option("1m", "--report-every", "One JSONL line per interval.")
    max_tokens: int | None = option(None, "--max-tokens", "Tokens per turn (default: the "
                                    "workload's own; chat-loop 48).")
    slo: float = option(60.0, "--slo", "Seconds a turn may take and still count as goodput.")


class SoakSettings(BaseModel):
    """The params checked: durations in seconds, at least one agent."""

    workload: str = "coding-agent"
    agents: int = 4
    duration: float = 600.0
    report_every: float = 60.0
    max_tokens: int | None = None
    slo: float = 60.0

    @field_validator("duration", "report_every", mode="before")
    @classmethod
    def _seconds(cls, value: object) -> object:
        return parse_duration(value) if isinstance(value, str) else value

    @field_validator("agents")
    @classmethod
    def _some(cls, value: int) -> int:
        if value < 1:
            raise ValueError("agents must be at least 1")
        return value


class Soak(Scenario[Open, SoakSummary]):
    name = "soak"
    help = "Agent sessions for hours: leaks, drift and engine restarts over time."
    params = SoakScenarioParams
    summary = SoakSummary
    api = "chat"

    async def run(self, ctx: Context, params: Params) -> SoakSummary:
        p = SoakSettings.model_validate(params.given())
        request = SoakRequest(ctx.client.base_url, ctx.client.model, p.workload, p.agents,
                              p.duration, p.report_every, ctx.results.path.with_suffix(".jsonl"),
                              max_tokens=p.max_tokens, slo_s=p.slo)
        return await run_soak(request, say=lambda message: ctx.progress(message))
