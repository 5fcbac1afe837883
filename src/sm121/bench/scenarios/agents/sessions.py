"""What other wings build from the agents' sessions, in one place: soak's coding-agent
workload runs them one turn a step (a conversation of the workload fitted to the served
window, its tools in the request or in the system prompt), and tune prices an arm's long
prefill with the workload's own background prompt sent alone (`exclusive_prefill`). The
modules these come from are the agents scenario's own; this is their public face."""

from __future__ import annotations

from sm121.bench.client import BenchClient
from sm121.bench.scenarios.agents.conversation import (
    Conversation,
    tool_definitions,
    tools_as_text,
)
from sm121.bench.scenarios.agents.messages import ToolSpec, user
from sm121.bench.scenarios.agents.run import tools_mode
from sm121.bench.scenarios.agents.session import background_prompt, piece_counter, send
from sm121.bench.scenarios.agents.workload import (
    Workload,
    fit,
    fit_to_server,
    load_workload,
    turns_that_fit,
)
from sm121.engines.client import max_model_len
from sm121.errors import Sm121Error

__all__ = ["Conversation", "ToolSpec", "Workload", "exclusive_prefill", "fit", "load_workload",
           "piece_counter", "send", "tool_definitions", "tools_as_text", "tools_mode",
           "turns_that_fit"]


async def exclusive_prefill(client: BenchClient, workload_name: str, turns: int | None
                            ) -> tuple[int | None, float | None] | None:
    """The workload's background prompt, fitted to the served window as an agents run fits
    it, sent alone with one output token: (its prompt tokens, its TTFT). None when the
    workload has no background job."""
    workload = load_workload(workload_name)
    if workload.background is None:
        return None
    max_len = max_model_len(await client.engine.models(), client.model)
    if not max_len:
        raise Sm121Error("the server does not report its max_model_len in /v1/models",
                         "the exclusive prefill fits the workload to the served window")
    # The agents run's own fitting, so the length matches the job in its runs
    fitted = fit_to_server(workload, max_len, turns).fitted
    tokens = fitted.background_tokens if fitted else None
    if not tokens:
        return None
    tag, text = await background_prompt(client, tokens)
    record = await send(client, [user(text)], 1, "exclusive-prefill", f"exclusive-{tag}", None)
    return record.prompt_tokens, record.ttft
