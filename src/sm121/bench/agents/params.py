"""The agent scenarios' parameters, checked before anything is sent: a bad workload, SLO or
capture folder fails at once. `agents_params` and `replay_params` are the registry's
`prepare` hooks (CLI values -> scenario params); `bench ab` and `bench sweep` use
`agent_params` for theirs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sm121.bench.agents.capture_log import load_capture, schedule
from sm121.bench.agents.slo import parse_slo
from sm121.bench.agents.workload import load_workload
from sm121.errors import Sm121Error


def agent_params(agents: int, turns: int | None, duration: float | None, workload: str,
                 slo: str) -> dict[str, Any]:
    if agents < 1:
        raise Sm121Error("--agents must be at least 1", "example: --agents 4")
    if turns is not None and duration is not None:
        raise Sm121Error("give --turns or --duration, not both", "example: --turns 6")
    parse_slo(slo)
    load_workload(workload)
    spec = str(Path(workload).resolve()) if Path(workload).is_file() else workload
    return {"agents": agents, "turns": None if duration else (turns or 6),
            "duration_s": duration, "workload": spec, "slo": slo}


def agents_params(values: dict[str, Any]) -> dict[str, Any]:
    return agent_params(values["agents"], values["turns"], values["duration"],
                        values["workload"], values["slo"])


def replay_params(values: dict[str, Any]) -> dict[str, Any]:
    capture_dir, speed, slo = Path(values["capture_dir"]), values["speed"], values["slo"]
    parse_slo(slo)
    schedule(load_capture(capture_dir), speed)  # a bad folder or speed fails before sending
    return {"capture_dir": str(capture_dir.resolve()), "speed": speed, "slo": slo}
