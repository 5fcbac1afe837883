"""Which upstream serves a request: the pool of replicas serving its `model`, then one replica.

Affinity is rendezvous (highest-random-weight) hashing of the session key over the pool's
replicas: each session has one owner, the same on every turn, and adding or losing a replica
moves only the sessions it owned. An agent's turns therefore land where its prefix is cached.

A request leaves its owner (a spill) only when the owner would make it wait (saturated) or
is ejected (unhealthy). A saturated owner spills to the least-loaded replica that is not
saturated; an unhealthy owner hands its sessions to the next replica in their own rendezvous
order, so a session keeps one fallback and finds its prefix there from the second turn on.
When every replica is saturated the request stays with its owner and queues there.

Per request this is one dictionary lookup and one short hash per replica of the model.
"""

from __future__ import annotations

import hashlib
import itertools
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from sm121.gateway.replicas import Replica
from sm121.gateway.replies import Refused

AFFINITY, SPILL, ROUND_ROBIN = "affinity", "spill", "round_robin"


class NoRoute(Refused):
    """The request names no model this gateway can serve; its message says which exist."""


@dataclass(frozen=True)
class Route:
    replica: Replica
    how: str  # affinity | spill | round_robin
    owner: Replica | None = None  # the session's own replica, when the request left it
    reason: str = ""  # why it left: saturated | unhealthy


def weight(key: str, name: str) -> int:
    digest = hashlib.blake2b(f"{name}\0{key}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def rendezvous(key: str, replicas: Iterable[Replica]) -> list[Replica]:
    """The replicas in the session's own order of preference, owner first."""
    return sorted(replicas, key=lambda r: weight(key, r.name), reverse=True)


class Router:
    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.replicas: list[Replica] = []
        self._pools: dict[str, list[Replica]] = {}
        self._turn = itertools.count()

    def update(self, replicas: Sequence[Replica]) -> None:
        """Rebuild the model index; called when a replica joins, leaves or is discovered."""
        self.replicas = list(replicas)
        pools: dict[str, list[Replica]] = {}
        for replica in self.replicas:
            for model in replica.models:
                pools.setdefault(model, []).append(replica)
        self._pools = pools

    @property
    def models(self) -> list[str]:
        return sorted(self._pools)

    def pool(self, model: object) -> list[Replica]:
        """The replicas serving `model`, or NoRoute with an answer for the client."""
        if isinstance(model, str) and model in self._pools:
            return self._pools[model]
        if len(self.replicas) == 1 and not self.replicas[0].discovered:
            return self.replicas  # one engine not yet asked: it answers for itself
        undiscovered = [r.name for r in self.replicas if not r.discovered]
        if not isinstance(model, str) or not model:
            if len(self._pools) == 1 and not undiscovered:
                return next(iter(self._pools.values()))
            raise NoRoute(400, f"the request names no model; this gateway serves "
                          f"{self._known()}", "invalid_request_error", "no_model", "model")
        if undiscovered:
            raise NoRoute(
                503, f"the model {model!r} is not known yet: {', '.join(undiscovered)} "
                f"did not answer /v1/models (starting or down); known: {self._known()}",
                "upstream_unavailable", "model_unknown_yet", "model")
        raise NoRoute(404, f"The model {model!r} does not exist on this gateway; "
                      f"it serves {self._known()}", "invalid_request_error", "model_not_found",
                      "model", code="model_not_found")

    def _known(self) -> str:
        return ", ".join(repr(m) for m in self.models) or "no model yet"

    def pick(self, pool: Sequence[Replica], session: str,
             exclude: Sequence[Replica] = ()) -> Route | None:
        candidates = [r for r in pool if r not in exclude] if exclude else pool
        if not candidates:
            return None
        if len(candidates) == 1:
            return Route(candidates[0], AFFINITY)
        healthy = [r for r in candidates if r.healthy]
        if self.mode == "round-robin":
            chosen = healthy or candidates
            return Route(chosen[next(self._turn) % len(chosen)], ROUND_ROBIN)
        ranked = rendezvous(session, candidates)
        owner = ranked[0]
        # Nothing known good: try the owner, the error says the rest. Envoy's panic mode does
        # the same (past its threshold it "will disregard health status"): an ejection is a
        # guess, and a guess must not turn a model's only way to an engine into a 503.
        if not healthy:
            return Route(owner, AFFINITY)
        now = time.perf_counter()
        if owner.healthy:
            if not owner.saturated(now):
                return Route(owner, AFFINITY)
            idle = [r for r in healthy if r is not owner and not r.saturated(now)]
            if not idle:
                return Route(owner, AFFINITY)  # everyone is busy: queue at home
            return Route(min(idle, key=Replica.load), SPILL, owner, "saturated")
        fallback = next(r for r in ranked if r.healthy)
        if fallback.saturated(now):
            idle = [r for r in healthy if not r.saturated(now)]
            fallback = min(idle, key=Replica.load) if idle else fallback
        return Route(fallback, SPILL, owner, "unhealthy")
