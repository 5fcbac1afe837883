"""The agent scenarios' parameters, checked before anything is sent: a bad workload, SLO or
capture folder fails at once. `agent_params` and `replay_params` back the registry's
`prepare` hooks (CLI values -> scenario params); `bench ab`, `bench sweep` and tune use
`agent_params` for theirs."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

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


class ReplayRunParams(BaseModel):
    """A replay's checked params, as its results file keeps them (`model_dump`)."""

    model_config = ConfigDict(frozen=True)

    capture_dir: str  # absolute
    speed: float
    slo: str


def agent_params(agents: int, turns: int | None, duration: float | None, workload: str,
                 slo: str, session_start: str = "together") -> AgentRunParams:
    if agents < 1:
        raise Sm121Error("--agents must be at least 1", "example: --agents 4")
    if turns is not None and duration is not None:
        raise Sm121Error("give --turns or --duration, not both", "example: --turns 6")
    parse_slo(slo)
    session_start_delays(session_start, agents, load_workload(workload))
    spec = str(Path(workload).resolve()) if Path(workload).is_file() else workload
    return AgentRunParams(agents=agents, turns=None if duration else (turns or 6),
                          duration_s=duration, workload=spec, slo=slo,
                          session_start=session_start)


def replay_params(capture_dir: Path, speed: float, slo: str) -> ReplayRunParams:
    parse_slo(slo)
    schedule(load_capture(capture_dir), speed)  # a bad folder or speed fails before sending
    return ReplayRunParams(capture_dir=str(capture_dir.resolve()), speed=speed, slo=slo)
