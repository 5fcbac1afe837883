"""One turn of a soak agent and the interface every soak workload offers (workload.py
picks one by name; agent_sessions.py and the chat loop implement it). Its own module, so the
workloads build on it without importing each other."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from sm121.bench.client import BenchClient


@dataclass(frozen=True)
class TurnOutcome:
    ok: bool
    completion_tokens: int = 0
    prompt_tokens: int = 0
    cached_tokens: int | None = None  # as the reply said it: None, it carried no count
    latency_s: float = 0.0
    error: str | None = None


class SoakWorkload(Protocol):
    name: str
    api: str  # what the soak's client speaks for it: chat or completions

    async def prepare(self, client: BenchClient) -> None:
        """Once, before the agents start (sizes fitted to the server, tools)."""
        ...

    async def step(self, client: BenchClient, agent: int) -> TurnOutcome:
        """One request of agent `agent`; never raises for a failed request."""
        ...
