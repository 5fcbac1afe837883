"""The agent scenarios' parameters, checked before anything is sent: a bad workload, SLO or
capture folder fails at once. `agent_params` and `replay_params` back the registry's
`prepare` hooks (CLI values -> scenario params); `bench ab`, `bench sweep` and tune use
`agent_params` for theirs."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

from sm121.bench.gauges import INTERVAL_S
from sm121.bench.scenarios.agents.capture_log import load_capture, schedule
from sm121.bench.scenarios.agents.run import session_start_delays
from sm121.bench.scenarios.agents.slo import parse_slo
from sm121.bench.scenarios.agents.workload import load_workload
from sm121.errors import Sm121Error


class AgentRunParams(BaseModel):
    """An agents run's checked params, as its results file keeps them (`model_dump`)."""

    model_config = ConfigDict(frozen=True)

    agents: int
    turns: int | None  # None with duration_s
    duration_s: float | None
    workload: str  # a preset's name or a workload file's absolute path
    slo: str
    session_start: str = "together"  # together | stagger
    run: str | None = None  # the sm121 run behind the URL (None: the one serving it, if any)
    pool_tokens: int | None = None  # the KV pool, given (None: the engine's, or its boot log)
    gauges_every_s: float = INTERVAL_S  # the engine's gauges sampled this often (0: not)


class ReplayRunParams(BaseModel):
    """A replay's checked params, as its results file keeps them (`model_dump`)."""

    model_config = ConfigDict(frozen=True)

    capture_dir: str  # absolute
    speed: float
    slo: str


def agent_params(agents: int, turns: int | None, duration: float | None, workload: str,
                 slo: str, session_start: str = "together", run: str | None = None,
                 pool_tokens: int | None = None, gauges_every_s: float = INTERVAL_S
                 ) -> AgentRunParams:
    if agents < 1:
        raise Sm121Error("--agents must be at least 1", "example: --agents 4")
    if pool_tokens is not None and pool_tokens < 1:
        raise Sm121Error("--pool-tokens must be at least 1", "example: --pool-tokens 392032")
    if gauges_every_s < 0:
        raise Sm121Error("--gauges-every must be 0 (off) or more", "example: --gauges-every 0.5")
    if turns is not None and duration is not None:
        raise Sm121Error("give --turns or --duration, not both", "example: --turns 6")
    parse_slo(slo)
    session_start_delays(session_start, agents, load_workload(workload))
    spec = str(Path(workload).resolve()) if Path(workload).is_file() else workload
    return AgentRunParams(agents=agents, turns=None if duration else (turns or 6),
                          duration_s=duration, workload=spec, slo=slo,
                          session_start=session_start, run=run, pool_tokens=pool_tokens,
                          gauges_every_s=gauges_every_s)


def replay_params(capture_dir: Path, speed: float, slo: str) -> ReplayRunParams:
    parse_slo(slo)
    schedule(load_capture(capture_dir), speed)  # a bad folder or speed fails before sending
    return ReplayRunParams(capture_dir=str(capture_dir.resolve()), speed=speed, slo=slo)
