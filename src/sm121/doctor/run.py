"""Run the doctor: probe each node (this machine, or every node of a cluster over SSH), then
turn the facts into checks with findings."""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from sm121 import paths
from sm121.cluster.spec import Cluster, Node, load_cluster
from sm121.cluster.trust import cluster_needs, require_cluster_trust
from sm121.doctor import memory_checks as mem
from sm121.doctor import network_checks as net
from sm121.doctor.model import CheckResult, DoctorReport, NodeContext, NodeReport
from sm121.doctor.weights_read import node_reads
from sm121.doctor.weights_route import check_copy_tool, check_weights_route
from sm121.engines.adapter import EngineAdapter
from sm121.engines.registry import adapter_for, has_adapter
from sm121.errors import Sm121Error
from sm121.hosts.facts import HostFacts, ProbeRequest, gather
from sm121.hosts.transport import LocalTransport, Transport, transport_for
from sm121.memory.model import NodeMemory
from sm121.memory.planner import plan_memory
from sm121.plan.effective import effective_profile, resolve_profile
from sm121.plan.render import fabric_env
from sm121.recipes.loader import LoadedRecipe, load_recipe
from sm121.recipes.schema import ArgValue, ModelSource
from sm121.sizing.inputs import memory_request
from sm121.sizing.model_files import hf_cache_dir, model_directory
from sm121.stage.staged import node_staged

Probe = Callable[[str, Transport, ProbeRequest], HostFacts]


@dataclass(frozen=True)
class DoctorRequest:
    cluster: str | None = None
    recipe: str | None = None
    profile: str | None = None
    overrides: Mapping[str, ArgValue] | None = None
    root: str = "/"  # a saved /proc and /sys tree instead of the live one (tests, post-mortems)
    trust: bool = False  # allow the cluster file's own programs and configs (ssh_config)


def run_doctor(request: DoctorRequest, probe: Probe = gather) -> DoctorReport:
    loaded = load_recipe(request.recipe) if request.recipe else None
    profile = (resolve_profile(loaded.recipe, request.profile, loaded.source) if loaded
               else None)
    cluster = load_cluster(request.cluster) if request.cluster else None
    if cluster is not None:
        require_cluster_trust(cluster[1], cluster_needs(cluster[0]), request.trust)
    # Where the recipe meets its engine: the doctor run's one lookup, carried in each node's
    # context (an engine without an adapter still gets its host checks).
    engine = (adapter_for(loaded.recipe.engine.kind)
              if loaded is not None and has_adapter(loaded.recipe.engine.kind) else None)
    nodes = _nodes(cluster)
    notes = [] if cluster else ["no --cluster: this machine only"]
    reports = []
    for spec in nodes:
        ctx = _context(spec, cluster, loaded, engine, profile, request)
        try:
            transport = _transport(spec, cluster)
            if loaded is not None and cluster is not None:
                ctx = replace(ctx, staged=node_staged(transport, spec, loaded.recipe,
                                                      isinstance(transport, LocalTransport)))
            facts = probe(ctx.name, transport, _probe_request(ctx, loaded, request))
        except Sm121Error as exc:
            reports.append(NodeReport(node=ctx.name, error=f"{exc.message} ({exc.hint})"))
            continue
        reports.append(node_report(facts, _with_memory(ctx, loaded, facts, request)))
    return DoctorReport(recipe=loaded.recipe.name if loaded else None, profile=profile,
                        nodes=reports, notes=notes)


def node_report(facts: HostFacts, ctx: NodeContext) -> NodeReport:
    checks: list[CheckResult | None] = [
        mem.check_memory(facts, ctx), mem.check_weights_cache(facts, ctx),
        mem.check_weights_vs_ram(facts, ctx), *net.check_caches(facts, ctx),
        net.check_nccl(facts, ctx), net.check_fabric(facts, ctx), mem.check_gmu(ctx),
        mem.check_uma_gate(facts, ctx), check_weights_route(facts, ctx),
        check_copy_tool(facts, ctx),
    ]
    return NodeReport(node=ctx.name, hostname=facts.hostname,
                      checks=[c for c in checks if c is not None])


def _nodes(cluster: tuple[Cluster, str] | None) -> list[Node | None]:
    return list(cluster[0].ordered()) if cluster else [None]


def _transport(spec: Node | None, cluster: tuple[Cluster, str] | None) -> Transport:
    """The orchestration's transport: this machine, or OpenSSH with the cluster's user,
    port and ssh_config."""
    if spec is None or cluster is None:
        return LocalTransport()
    return transport_for(cluster[0].ssh_target(spec), cluster[0].ssh_port,
                         cluster[0].ssh_config, name=spec.name)


def _context(spec: Node | None, cluster: tuple[Cluster, str] | None,
             loaded: LoadedRecipe | None, engine: EngineAdapter | None, profile: str | None,
             request: DoctorRequest) -> NodeContext:
    ctx = NodeContext(name=spec.name if spec else "local", spec=spec,
                      cluster_source=cluster[1] if cluster else "")
    if loaded is None:
        return ctx
    recipe = loaded.recipe
    effective = effective_profile(recipe, profile, loaded.source, request.overrides)
    args, env = effective.args, effective.env
    if spec is not None and recipe.parallelism.nodes > 1:
        host_ip_env = engine.host_ip_env if engine else None
        env |= fabric_env(spec, host_ip_env)  # what the plan renders for this node
    hf, jit = _cache_paths(loaded)
    reads = node_reads(recipe, args, engine.memory) if engine else None
    name = recipe.name if loaded.builtin else loaded.source
    chosen = ["--profile", profile] if profile else []
    stage = shlex.join(["sm121", "stage", name, *chosen, "--cluster",
                        cluster[1] if cluster else "CLUSTER.yaml"])
    return replace(ctx, recipe=recipe, engine=engine, profile=profile, args=args, env=env, hf_cache=hf,
                   jit_cache=jit, model_share_bytes=reads.bytes if reads else None,
                   reads_how=reads.how if reads else "", stage_command=stage)


def _cache_paths(loaded: LoadedRecipe) -> tuple[str, str]:
    """The host side of the recipe's cache mounts, else the engine's defaults."""
    hf, jit = str(hf_cache_dir().parent), "~/.cache/vllm"
    for mount in loaded.recipe.runtime.mounts:
        purpose = mount.purpose.lower()
        if "hf cache" in purpose or "huggingface" in mount.container:
            hf = mount.host
        elif "jit" in purpose or "compile" in purpose:
            jit = mount.host
    return hf, jit


def _probe_request(ctx: NodeContext, loaded: LoadedRecipe | None,
                   request: DoctorRequest) -> ProbeRequest:
    weights = []
    if loaded is not None:
        model = loaded.recipe.model
        if model.source is ModelSource.HF and model.hf_id:
            repo = paths.hf_repo_folder(model.hf_id)
            weights.append(f"{ctx.hf_cache}/hub/{repo}/snapshots/*")
        elif (directory := model_directory(loaded.recipe)) is not None:
            weights.append(str(directory))
    located = {"hf-cache": ctx.hf_cache, "jit-cache": ctx.jit_cache}
    if weights:
        located["weights"] = weights[0].removesuffix("/*")
    return ProbeRequest(root=request.root, weights=weights, paths=located)


def _with_memory(ctx: NodeContext, loaded: LoadedRecipe | None, facts: HostFacts,
                 request: DoctorRequest) -> NodeContext:
    """The memory plan on this node's own memory (its MemTotal)."""
    if loaded is None or ctx.engine is None:
        return ctx
    total = facts.gib("MemTotal") or (ctx.spec.memory_gib if ctx.spec else None)
    node = NodeMemory(ctx.name, total or 0.0, "this node's /proc/meminfo", uma=True)
    plan = plan_memory(memory_request(loaded, ctx.profile, request.overrides, node=node,
                                      engine=ctx.engine))
    return replace(ctx, memory=plan)

