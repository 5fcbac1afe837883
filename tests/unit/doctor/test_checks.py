"""Checks over sample nodes: the UMA gate, NFS over the management link, NCCL names, fabric."""

from __future__ import annotations

from pathlib import Path

from doctor_hosts import HOSTS

from sm121.cluster.spec import load_cluster
from sm121.doctor.model import NodeContext
from sm121.doctor.run import DoctorRequest, node_report, run_doctor
from sm121.engines.registry import adapter_for
from sm121.hosts.facts import HostFacts
from sm121.memory.planner import NodeMemory, plan_memory
from sm121.recipes.loader import load_recipe
from sm121.sizing.inputs import memory_request

DS4 = "deepseek-v4-flash-eugr-agent"
LAGUNA = "laguna-s-2.1"  # the UMA gate's boots were measured on Laguna S 2.1 (RESULTS.md s. 6)


def recipe_context(facts: HostFacts, name: str, profile: str, **overrides: object
                   ) -> NodeContext:
    loaded = load_recipe(name)
    args = {**loaded.recipe.args, **loaded.recipe.profiles[profile].args, **overrides}
    node = NodeMemory("spark1", facts.gib("MemTotal"), "fixture", uma=True)
    engine = adapter_for(loaded.recipe.engine.kind)
    plan = plan_memory(memory_request(loaded, profile, overrides, node=node,  # type: ignore[arg-type]
                                      engine=engine))
    return NodeContext(name="spark1", recipe=loaded.recipe, engine=engine, profile=profile,
                       args=args, memory=plan)


def ds4_context(facts: HostFacts, **overrides: object) -> NodeContext:
    return recipe_context(facts, DS4, "agent", **overrides)


def laguna_context(facts: HostFacts, **overrides: object) -> NodeContext:
    return recipe_context(facts, LAGUNA, "agent-32k", **overrides)


def checks(facts: HostFacts, ctx: NodeContext) -> dict:
    return {c.check: c for c in node_report(facts, ctx).checks}


def error_fix(check) -> str:  # type: ignore[no-untyped-def]
    return next(f.fix for f in check.findings if f.severity.value == "error")


def test_laguna_at_128k_will_refuse_with_the_fields_choices(head: HostFacts) -> None:
    gate = checks(head, laguna_context(head, **{"max-model-len": 131072}))["uma-gate"]
    assert gate.status == "error"
    assert "will refuse" in gate.summary and "sees 82.0 GiB free" in gate.summary
    fix = error_fix(gate)
    assert "drop_caches" in fix and "unverified" in fix and "MemAvailable" in fix
    assert "neither a yes nor a no" in fix and "sudo -n" in fix


def test_laguna_at_262k_refuses_with_the_fields_need(head: HostFacts) -> None:
    gate = checks(head, laguna_context(head, **{"max-model-len": 262144}))["uma-gate"]
    assert gate.status == "error" and "needs 18.35 GiB" in gate.summary


def test_the_same_node_serves_laguna_32k_and_ds4_1m(head: HostFacts) -> None:
    """MemFree 82.0 < 93.3 GiB requested is said, not counted: the field's boots with the
    page cache kept passed the start."""
    gate = checks(head, laguna_context(head))["uma-gate"]
    assert "passes" in gate.summary and "not counted as a refusal" in gate.summary
    assert gate.status == "ok" and not gate.findings
    gate = checks(head, ds4_context(head))["uma-gate"]
    assert "passes" in gate.summary and "booted at max-model-len 1,048,576" in gate.summary
    assert "would need (assumed, not measured on this stack)" in gate.summary
    assert gate.status == "ok"


def test_nccl_on_the_management_link_warns(head: HostFacts) -> None:
    """The field ruled out NCCL over the 10G management link: NCCL must ride the fabric."""
    ctx = NodeContext(name="spark1", env={"NCCL_NET": "Socket", "NCCL_SOCKET_IFNAME": "enP7s7"})
    nccl = checks(head, ctx)["nccl"]
    (finding,) = nccl.findings
    assert nccl.status == "warning" and "management link" in finding.message
    assert "NCCL_NET=Socket" in finding.message and "enp1s0f0np0" in finding.fix
    fabric = NodeContext(name="spark1", env={"NCCL_NET": "IB", "NCCL_SOCKET_IFNAME": "enp1s0f0np0"})
    assert not checks(head, fabric)["nccl"].findings


def test_hf_cache_on_nfs_over_the_management_link_warns(head: HostFacts) -> None:
    cache = checks(head, NodeContext(name="spark1"))["hf-cache"]
    assert cache.status == "warning"
    assert "enP7s7" in cache.summary and "management link" in cache.findings[0].message


def test_nccl_names_that_do_not_exist_are_errors(worker: HostFacts) -> None:
    copied = NodeContext(name="spark2", env={"NCCL_SOCKET_IFNAME": "enp1s0f0np0",
                                             "NCCL_IB_HCA": "rocep1s0f0"})
    nccl = checks(worker, copied)["nccl"]
    assert nccl.status == "error" and len(nccl.findings) == 2
    own = NodeContext(name="spark2", env={"NCCL_SOCKET_IFNAME": "enP2p1s0f1np1",
                                          "NCCL_IB_HCA": "roceP2p1s0f1:1"})
    assert checks(worker, own)["nccl"].status == "info"


def test_cluster_file_copying_the_heads_values_fails_on_the_worker(worker: HostFacts) -> None:
    for name, expected in (("cluster-copied-head.yaml", "error"), ("cluster-own-values.yaml", "ok")):
        cluster, source = load_cluster(HOSTS / name)
        spec = cluster.nodes[1]
        fabric = checks(worker, NodeContext(name=spec.name, spec=spec, cluster_source=source))
        assert fabric["fabric"].status == expected


def test_swap_in_use_warns(worker: HostFacts) -> None:
    assert checks(worker, NodeContext(name="spark2"))["memory"].status == "warning"


def test_gmu_070_is_flagged_by_the_doctor(head: HostFacts) -> None:
    gmu = checks(head, ds4_context(head, **{"gpu-memory-utilization": 0.70}))["gmu"]
    assert gmu.status == "warning" and "KV lever" in gmu.findings[0].message


def test_run_doctor_probes_a_tree_and_reports_errors(tmp_path: Path) -> None:
    report = run_doctor(DoctorRequest(recipe=LAGUNA, overrides={"max-model-len": 262144},
                                      root=str(HOSTS / "gb10-head")))
    assert report.has_errors
    assert {c.check for c in report.nodes[0].checks} >= {"memory", "hf-cache", "uma-gate"}
