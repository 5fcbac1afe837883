"""`agent-check` as a `Scenario`: its report model and a run over `run_agent_check`. Its own
command (`sm121 bench agent-check`, in cli/) writes the report as JSON and Markdown and exits
1 on a failed case; through `run_scenario` the report is the run's summary."""

from __future__ import annotations

from sm121.bench.context import Context
from sm121.bench.result_models import Open
from sm121.bench.scenario import Params, Scenario, option
from sm121.bench.scenarios.agent_check.report_file import AgentCheckReport
from sm121.bench.scenarios.agent_check.runner import run_agent_check


class AgentCheckParams(Params):
    only: list[str] = option([], "--cases", "Only these cases or groups (e.g. tools,api.models).")
    long_tokens: int | None = option(None, "--long-tokens", "Tokens of the long-input case.")
    api: str = option("chat", "--api", "chat, messages or responses.")


class AgentCheck(Scenario[Open, AgentCheckReport]):
    name = "agent-check"
    help = "Does this endpoint work for agent clients (tools, streaming, usage, limits)?"
    params = AgentCheckParams
    summary = AgentCheckReport
    api = "chat"

    async def run(self, ctx: Context, params: Params) -> AgentCheckReport:
        return await run_agent_check(ctx.client.base_url, ctx.client.model,
                                     progress=ctx.progress, **params.given())
