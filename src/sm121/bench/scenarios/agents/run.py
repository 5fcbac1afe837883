"""`agents`: N concurrent coding-agent sessions against one server, with an optional
background batch job; every turn is recorded as it ends, the summary at the end.

Setup happens before the clock starts (tool definitions, every session's opening prompt, the
background prompt), so building exact-length text never overlaps a measured turn's prefill.
"""

from __future__ import annotations

import time
from typing import Any

from pydantic import BaseModel, ConfigDict

from sm121.bench.client import BenchClient
from sm121.bench.gauges import INTERVAL_S, GaugeSampler
from sm121.bench.runner import Context, run_together
from sm121.bench.scenarios.agents.capacity import knobs_from_args, run_pool, run_verdict
from sm121.bench.scenarios.agents.conversation import tool_definitions, tools_as_text
from sm121.bench.scenarios.agents.messages import ToolSpec, user, wire
from sm121.bench.scenarios.agents.models import AgentsSummary, TurnSample, read_run
from sm121.bench.scenarios.agents.session import (
    Record,
    RunPlan,
    background_prompt,
    open_conversation,
    piece_counter,
    run_background,
    run_session,
)
from sm121.bench.scenarios.agents.slo import DEFAULT_SLO, parse_slo
from sm121.bench.scenarios.agents.summary import summarize_run
from sm121.bench.scenarios.agents.workload import Workload, fit_to_server, load_workload
from sm121.bench.server import counter_deltas, prefix_reuse, read_counters
from sm121.engines.client import EngineClient
from sm121.errors import Sm121Error
from sm121.memory.capacity_types import Knobs, Pool
from sm121.serving.endpoint_run import RunFacts, endpoint_run


class AgentsRunArgs(BaseModel):
    """What one agents run is asked (the params its results file keeps)."""

    model_config = ConfigDict(extra="ignore")

    agents: int = 4
    turns: int | None = 6  # None (or 0): until duration_s
    duration_s: float | None = None
    workload: str | Workload = "coding-agent"  # a preset, a YAML file, or the spec itself
    slo: str = DEFAULT_SLO
    session_start: str = "together"  # together | stagger (session_start_delays)
    run: str | None = None  # the sm121 run behind the URL (None: the one serving it, if any)
    pool_tokens: int | None = None  # the KV pool, given: wins over what the engine says
    gauges_every_s: float = INTERVAL_S  # the engine's gauges sampled this often (0: not)


SESSION_STARTS = ("together", "stagger")


def session_start_delays(start: str, agents: int, workload: Workload) -> list[float]:
    """When each session's first turn goes: all at once (together), or session i at i times
    the workload's mean think time (stagger: agents arriving one by one, as a team's do)."""
    if start not in SESSION_STARTS:
        raise Sm121Error(f"--session-start {start!r} is unknown",
                         f"choose one of: {', '.join(SESSION_STARTS)}")
    if start == "together":
        return [0.0] * agents
    think = workload.think_time_s
    return [i * (think.min + think.max) / 2 for i in range(agents)]


async def tools_mode(client: BenchClient, workload: Workload,
                     tools: list[ToolSpec]) -> tuple[str, str | None]:
    """How the tools travel: "api" when the server takes `tools` (asked once, with a
    one-token request), else "system_prompt" (with the server's reason), or "none"."""
    if not tools:
        return "none", None
    if workload.tools.placement == "system_prompt":
        return "system_prompt", "the workload places them there"
    if client.api != "chat":
        return "system_prompt", "the completions API has no `tools`"
    try:
        await client.chat(wire([user("tools check")]), 1, "tools-check",
                          tools=wire(tools or []))
    except Sm121Error as exc:
        return "system_prompt", f"the server refused `tools`: {exc.message[:300]}"
    return "api", None


async def agents(ctx: Context, p: AgentsRunArgs) -> AgentsSummary:
    """The run: its turns recorded as they end; its summary, engine deltas and wall time."""
    n_agents, turns = p.agents, p.turns or None
    duration = p.duration_s or None
    if turns is None and duration is None:
        raise Sm121Error("agents needs --turns or --duration", "example: --turns 6")
    parse_slo(p.slo)
    max_len = ctx.server.get("max_model_len")
    if not max_len:
        raise Sm121Error("the server does not report its max_model_len in /v1/models",
                         "agents fits its workload to the context; use a vLLM server")
    served = endpoint_run(ctx.client.base_url, p.run)  # a bad --run fails before any turn
    base = p.workload if isinstance(p.workload, Workload) else load_workload(p.workload)
    workload = fit_to_server(base, int(max_len), turns)
    client = ctx.client
    ctx.progress("agents: building tools and prompts", 0, 1)
    tools = await tool_definitions(piece_counter(client), workload)
    mode, reason = await tools_mode(client, workload, tools)
    tools_text = tools_as_text(tools) if mode == "system_prompt" else ""
    ctx.add({"kind": "config", "workload": workload.model_dump(mode="json"),
             "agents": n_agents, "turns": turns, "duration_s": duration, "slo": p.slo,
             "api": client.api, "tools_mode": mode, "tools_reason": reason,
             "session_start": p.session_start})
    total = n_agents * turns if turns else 0
    plan = RunPlan(client, workload, 0.0, tools if mode == "api" else None, turns, None,
                   record=_recorder(ctx, total), agents=n_agents)
    firsts = [await open_conversation(plan, i, 0, tools_text) for i in range(n_agents)]
    background_tokens = workload.fitted.background_tokens if workload.fitted else None
    background = None if workload.background is None or background_tokens is None else \
        await background_prompt(client, background_tokens)
    engine = _metrics_engine(client, served)
    before = await read_counters(client, engine)
    ctx.t0 = plan.t0 = time.monotonic()
    plan.deadline = plan.t0 + duration if duration else None
    delays = session_start_delays(p.session_start, n_agents, workload)
    jobs = [run_session(plan, i, firsts[i], tools_text, delays[i]) for i in range(n_agents)]
    if workload.background is not None and background is not None:
        jobs.append(run_background(plan, background, workload.background.output_tokens,
                                   workload.background.delay_s))
    gauges = None
    if p.gauges_every_s > 0:
        async with GaugeSampler(engine, plan.t0, p.gauges_every_s) as sampler:
            await run_together(*jobs)
        gauges = sampler.result()
        ctx.add(gauges)  # before the verdict, which reads its peaks
    else:
        await run_together(*jobs)
    deltas = counter_deltas(before, await read_counters(client, engine))
    run = read_run(ctx.results.data["samples"])
    summary = summarize_run(run, p.slo).model_copy(update={
        "engine_metrics": deltas, "prefix_reuse_metrics": prefix_reuse(deltas),
        "wall_s": time.monotonic() - plan.t0,
        "gauges": None if gauges is None else gauges.peaks()})
    cache = ctx.server.get("cache_config")
    verdict = run_verdict(run, summary, workload, turns or 0, p.slo, _pool(cache, p, served),
                          knobs=_knobs(served))
    if verdict is None:
        return summary
    ctx.add(verdict.model_dump(mode="json"))  # with the run's samples: A/B and sweep keep it
    return summary.model_copy(update={"capacity": verdict})


def _metrics_engine(client: BenchClient, served: RunFacts | None) -> EngineClient:
    """Where the engine's /metrics is read: the URL's own, or, where the URL is an sm121
    run's gateway (whose /metrics is its own), the engine behind it."""
    if served is not None and served.is_gateway(client.base_url):
        return EngineClient(client.session, served.engine_url)
    return client.engine


def _pool(cache_config: dict[str, Any] | None, p: AgentsRunArgs,
          served: RunFacts | None) -> Pool | None:
    """Given, else the engine's /metrics, else the boot log of the run serving the URL."""
    return run_pool(cache_config, p.pool_tokens,
                    served.pool_tokens if served else None,
                    served.pool_source if served else "a boot log")


def _knobs(served: RunFacts | None) -> Knobs | None:
    """The run's scheduler settings, from its plan (a URL sm121 did not serve: not known)."""
    if served is None:
        return None
    flags = served.adapter
    return knobs_from_args(served.engine_args, flags.scheduler, flags.memory.kv_cache_dtype)


def _recorder(ctx: Context, total: int) -> Record:
    def record(sample: TurnSample) -> None:
        ctx.add(sample.to_record())
        done = sum(1 for s in ctx.results.data["samples"] if s.get("kind") == "turn")
        ctx.progress(f"agents: {done} turns", done, total or done)

    return record
