"""Routing over replicas, without HTTP: rendezvous affinity, spill when the own replica is
saturated or ejected, ejection by error rate, re-admission timing."""

from __future__ import annotations

import time

import pytest

from sm121.gateway.config import RoutingSettings, UpstreamSpec
from sm121.gateway.metrics import GatewayMetrics
from sm121.gateway.replicas import Replica
from sm121.gateway.routing import NoRoute, Router, rendezvous


def _replicas(n: int, cap: int = 2, **settings: float) -> tuple[list[Replica], GatewayMetrics]:
    metrics = GatewayMetrics()
    routing = RoutingSettings(**settings)  # type: ignore[arg-type]
    replicas = [Replica(UpstreamSpec(url=f"http://127.0.0.1:{9000 + i}", name=f"r{i}",
                                     max_inflight=cap), metrics, routing) for i in range(n)]
    for replica in replicas:
        replica.learned([{"id": "m"}], 4096, 16)
    return replicas, metrics


def _router(replicas: list[Replica], mode: str = "affinity") -> Router:
    router = Router(mode)
    router.update(replicas)
    return router


def test_rendezvous_is_stable_and_spreads_sessions() -> None:
    replicas, _ = _replicas(3)
    owners = [rendezvous(f"s{i}", replicas)[0].name for i in range(300)]
    assert owners == [rendezvous(f"s{i}", list(reversed(replicas)))[0].name for i in range(300)]
    counts = {name: owners.count(name) for name in ("r0", "r1", "r2")}
    assert min(counts.values()) > 60, counts  # about 100 each


def test_losing_a_replica_moves_only_its_own_sessions() -> None:
    replicas, _ = _replicas(3)
    before = {f"s{i}": rendezvous(f"s{i}", replicas)[0].name for i in range(300)}
    after = {s: rendezvous(s, replicas[:2])[0].name for s in before}
    moved = [s for s in before if before[s] != after[s]]
    assert moved and all(before[s] == "r2" for s in moved)


def test_same_session_same_replica_every_turn() -> None:
    replicas, _ = _replicas(2)
    router = _router(replicas)
    picks = {router.pick(replicas, "agent-7").replica.name for _ in range(20)}  # type: ignore
    assert len(picks) == 1


async def test_saturated_owner_spills_to_least_loaded_and_back() -> None:
    replicas, _ = _replicas(3, cap=1)
    router = _router(replicas)
    route = router.pick(replicas, "s")
    assert route is not None and route.how == "affinity"
    owner = route.replica
    await owner.admission.general.acquire("other")  # its one slot is taken
    busy = next(r for r in replicas if r is not owner)
    await busy.admission.general.acquire("x")
    spilled = router.pick(replicas, "s")
    assert spilled is not None and spilled.how == "spill" and spilled.reason == "saturated"
    assert spilled.owner is owner and spilled.replica not in (owner, busy)  # the idle one
    owner.admission.general.release("other")
    assert router.pick(replicas, "s").replica is owner  # type: ignore[union-attr]


async def test_everyone_saturated_stays_home() -> None:
    replicas, _ = _replicas(2, cap=1)
    router = _router(replicas)
    for replica in replicas:
        await replica.admission.general.acquire("x")
    route = router.pick(replicas, "s")
    assert route is not None and route.how == "affinity"


def test_a_long_recent_queue_wait_counts_as_saturated() -> None:
    replicas, _ = _replicas(2, spill_queue_wait_s=0.5)
    owner = rendezvous("s", replicas)[0]
    owner.admission.last_wait_s, owner.admission.last_wait_at = 0.9, time.perf_counter()
    assert owner.saturated(time.perf_counter())
    assert not owner.saturated(time.perf_counter() + 5)  # an old wait says nothing


def test_unhealthy_owner_hands_sessions_to_their_next_choice() -> None:
    replicas, metrics = _replicas(3)
    router = _router(replicas)
    owner = rendezvous("s", replicas)[0]
    owner.failed("unreachable")
    route = router.pick(replicas, "s")
    assert route is not None and route.how == "spill" and route.reason == "unhealthy"
    assert route.replica is rendezvous("s", replicas)[1]
    assert metrics.registry.get_sample_value(
        "sm121_gateway_replica_ejections_total", {"upstream": owner.name,
                                                  "reason": "unreachable"}) == 1
    assert metrics.registry.get_sample_value(
        "sm121_gateway_replica_healthy", {"upstream": owner.name}) == 0


def test_error_rate_ejects_but_a_few_errors_do_not() -> None:
    replicas, _ = _replicas(1, min_errors=3, error_rate=0.5)
    replica = replicas[0]
    for ok in (True, True, True, False, True, False):
        replica.record(ok)
    assert replica.healthy
    replica.record(False)  # 3 of 7
    assert replica.healthy
    for _ in range(2):
        replica.record(False)  # 5 of 9
    assert not replica.healthy


def test_readmission_waits_and_backs_off() -> None:
    replicas, metrics = _replicas(1, readmit_after_s=0.2)
    replica = replicas[0]
    replica.failed("died")
    now = time.monotonic()
    assert not replica.may_readmit(now)
    assert replica.may_readmit(now + 0.25)
    replica.probe_failed_while_out()  # still down: wait twice as long next time
    assert not replica.may_readmit(now + 0.25)
    replica.readmit()
    assert replica.healthy and metrics.registry.get_sample_value(
        "sm121_gateway_replica_readmissions_total", {"upstream": replica.name}) == 1


def test_round_robin_takes_turns_over_healthy_replicas() -> None:
    replicas, _ = _replicas(3)
    router = _router(replicas, "round-robin")
    replicas[1].failed("died")
    names = [router.pick(replicas, "s").replica.name for _ in range(4)]  # type: ignore
    assert names == ["r0", "r2", "r0", "r2"]


def test_pool_by_model_and_the_404_names_what_exists() -> None:
    replicas, _ = _replicas(2)
    replicas[1].learned([{"id": "other"}], 4096, 16)
    router = _router(replicas)
    assert router.pool("m") == [replicas[0]] and router.pool("other") == [replicas[1]]
    with pytest.raises(NoRoute) as unknown:
        router.pool("nope")
    assert unknown.value.status == 404 and unknown.value.code == "model_not_found"
    assert "'m', 'other'" in unknown.value.message
    with pytest.raises(NoRoute) as missing:
        router.pool(None)  # two models: the request must say which
    assert missing.value.status == 400 and missing.value.param == "model"


def test_a_single_undiscovered_upstream_takes_everything() -> None:
    metrics = GatewayMetrics()
    replica = Replica(UpstreamSpec(url="http://127.0.0.1:9"), metrics, RoutingSettings())
    router = _router([replica])
    assert router.pool("anything") == [replica]
