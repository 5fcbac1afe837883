"""What `sm121 tune` is asked: the recipe, the workload and SLO, the budget, and how."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from sm121.bench.scenarios.agents.params import AgentRunParams
from sm121.bench.scenarios.agents.params import agent_params as checked_agent_params
from sm121.bench.tune.result import KneeParamsGiven, RequestRecord


@dataclass(frozen=True)
class TuneRequest:
    recipe: str
    workload: str
    slo: str
    agents: int
    out: Path
    port: int
    budget_s: float
    turns: int | None = 6
    baselines: list[str] | None = None  # None: the default profile and agent-admission
    knee_params: KneeParamsGiven = field(default_factory=dict)
    knee_file: Path | None = None  # reuse this knee instead of booting for one
    reps: int = 3
    max_candidates: int | None = None  # at most this many, whatever the budget allows
    sweep_points: int = 2  # capacity probes (agents runs at other N) per arm, at most
    boots: int = 3  # boots per finalist when the budget leaves room (1: no confirmation)
    max_agents: int | None = None  # the capacity search's top; None: 4x the target
    rest_s: float = 5.0
    rep_estimate_s: float = 60.0  # one agents run, until this tune has measured one
    boot_estimate_s: float | None = None  # a warm boot; None: the knee's boot (maybe cold)
    cluster: str | None = None  # a cluster file: every boot serves the plan on its nodes
    host: str = "127.0.0.1"  # the address the engine listens on
    trust: bool = False
    fresh: bool = False
    write: bool = True

    @property
    def largest_n(self) -> int:
        """The most agents any arm is tested at: every arm's max-num-seqs holds it + 1."""
        return max(self.agents, self.max_agents or 4 * self.agents)

    def to_record(self) -> RequestRecord:
        """The question as tune.json keeps it (what a resume must match)."""
        return RequestRecord(
            recipe=self.recipe, workload=self.workload, slo=self.slo, agents=self.agents,
            turns=self.turns, budget_s=self.budget_s, baselines=self.baselines,
            knee_params=self.knee_params, reps=self.reps, max_candidates=self.max_candidates,
            sweep_points=self.sweep_points, max_agents=self.largest_n, boots=self.boots,
            rest_s=self.rest_s, cluster=self.cluster, host=self.host)


def agent_params(request: TuneRequest) -> AgentRunParams:
    """The agents scenario's params (checked: a bad workload or SLO fails here)."""
    return checked_agent_params(request.agents, request.turns, None, request.workload,
                                request.slo)
