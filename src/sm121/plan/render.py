"""Render recipe + profile + cluster + overrides into a ServePlan. Pure: no I/O beyond reading
the recipe and cluster files the caller names (and the cluster's ssh_config, for its trust
check)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from string import Template

from sm121 import paths
from sm121.cluster.hosts import host_needs
from sm121.cluster.spec import Cluster, Node, check_fabric
from sm121.cluster.trust import cluster_needs
from sm121.engines.adapter import EngineAdapter, NodeArgvRequest
from sm121.engines.registry import adapter_for, has_adapter
from sm121.errors import Sm121Error
from sm121.findings import Finding, Severity, raise_on_errors
from sm121.plan.effective import EffectiveProfile, effective_profile, profile_args
from sm121.plan.model import (
    DerivedValue,
    NodePlan,
    ReadinessProbe,
    ServePlan,
    is_secret,
    rendered_with,
)
from sm121.plan.runtime_argv import container_name, docker_argv
from sm121.plan.trust import argv_needs, override_needs, trust_needs
from sm121.plan.validate import validate_overrides, validate_recipe
from sm121.recipes.loader import LoadedRecipe
from sm121.recipes.schema import ArgValue, ModelSource, Recipe

DEFAULT_PORT = 8000
MASTER_PORT = 29501


@dataclass(frozen=True)
class PlanRequest:
    recipe: LoadedRecipe
    profile: str | None = None
    cluster: tuple[Cluster, str] | None = None
    overrides: Mapping[str, ArgValue] | None = None
    port: int = DEFAULT_PORT
    host: str = "127.0.0.1"
    # The final check of a foreign recipe's argv by the engine's parser (which may import the
    # engine, seconds): off only for a caller that runs nothing and reads no needs_trust.
    argv_check: bool = True


def render_plan(request: PlanRequest) -> ServePlan:
    recipe, source = request.recipe.recipe, request.recipe.source
    if not has_adapter(recipe.engine.kind):
        raise Sm121Error(f"{source}: engine {recipe.engine.kind.value} has no renderer yet",
                         "vllm is the engine sm121 renders today")
    # Where a recipe first meets its engine: the one lookup of a render; everything below
    # takes this adapter, and the plan carries it to launch, serving, sizing and doctor.
    engine = adapter_for(recipe.engine.kind)
    effective = effective_profile(recipe, request.profile, source, request.overrides)
    profile, overrides = effective.profile, effective.overrides
    request = replace(request, profile=profile)
    findings = _validate(engine, request, profile, overrides)

    derived = engine.derived_args(recipe, effective.args)
    engine_args = effective.args | {name: value for name, (value, _) in derived.items()}
    own_args = {name: value for name, (value, _) in derived.items()}
    builtin = request.recipe.builtin
    # What is trusted as it is: sm121's own args, and a built-in recipe's profile. Never the
    # overrides (--set, an A/B arm, a resumed tune's args read back from disk).
    trusted_args = (profile_args(recipe, profile) | own_args) if builtin else own_args
    rendered = _node_plans(engine, request, effective, engine_args, trusted_args,
                           _model_ref(recipe))
    nodes = [node for node, _, _ in rendered]
    needs = (trust_needs(recipe, profile, builtin, engine)
             + override_needs(engine, recipe, overrides))
    if request.argv_check and (overrides or not builtin) and not needs:
        # Everything asked for is allow-listed: check that the argv as the engine parses it
        # agrees with the trusted part of it (the allow-list's own gaps would show here).
        needs = argv_needs(engine, recipe, [(tail, own) for _, tail, own in rendered])
    if request.cluster is not None:
        # The cluster file's programs and configs (a node's python, ssh_config): argv[0] and
        # the ssh that reaches each node, which the engine's parser never reads.
        needs = needs + cluster_needs(request.cluster[0])
        # Where the start scripts carry the user's secrets: each remote host a stranger's file
        # names is a trust item (cluster/hosts.py).
        needs = needs + host_needs(*request.cluster, _secrets_sent(nodes))
    return ServePlan.model_validate(dict(
        recipe=recipe.name,
        profile=profile,
        purpose=effective.purpose,
        engine=recipe.engine.kind.value,
        engine_args=engine_args,
        derived={k: DerivedValue(value=v, how=how) for k, (v, how) in derived.items()},
        overrides=overrides,
        model_ref=_model_ref(recipe),
        host=request.host,
        port=request.port,
        nodes=nodes,
        hooks=recipe.hooks_for(profile),
        readiness=ReadinessProbe(
            url=f"http://{_probe_host(request, nodes)}:{request.port}",
            model=recipe.model.id,
            prompt=recipe.readiness.prompt,
            max_tokens=recipe.readiness.max_tokens,
            timeout_s=recipe.readiness.timeout_s,
            tools=profile is not None and engine.wants_tools(effective.purpose),
        ),
        request_policy=recipe.request_policy,
        restart=recipe.restart,
        measured_on=recipe.profiles[profile].measured_on if profile else None,
        findings=findings,
        recipe_source=source,
        recipe_spec=_kept_recipe(recipe),
        needs_trust=needs,
    ), context=rendered_with(engine))  # the plan carries the adapter it was rendered with


def _secrets_sent(nodes: list[NodePlan]) -> Callable[[Node], str | None]:
    """What a node's start script receives from this machine's environment: its secrets by
    name (pass_env) and the secret variables its env values refer to (launch/runtimes)."""
    sent = {node.name: sorted({*node.pass_env, *(
        name for value in node.env.values() for name in _references(value) if is_secret(name))})
        for node in nodes}

    def receives(node: Node) -> str | None:
        names = sent.get(node.name)
        return (f"the secrets {', '.join(names)} from your environment (in its start script)"
                if names else None)
    return receives


def _references(value: str) -> list[str]:
    return [m.group("named") or m.group("braced") for m in Template.pattern.finditer(value)
            if m.group("named") or m.group("braced")]


def _kept_recipe(recipe: Recipe) -> dict[str, object]:
    """The recipe as a run keeps it: secret-named env entries dropped (the plan passes them
    by name; not even a ${VAR} reference to a secret reaches the disk)."""
    data = recipe.model_dump(mode="json")
    for holder in [data, *data["profiles"].values()]:
        holder["env"] = {k: v for k, v in holder["env"].items() if not is_secret(k)}
    return data


def _validate(engine: EngineAdapter, request: PlanRequest, profile: str | None,
              overrides: dict[str, ArgValue]) -> list[Finding]:
    recipe, source = request.recipe.recipe, request.recipe.source
    findings = (validate_recipe(recipe, source, engine)
                + validate_overrides(recipe, profile, overrides, source, engine))
    if request.cluster is not None:
        cluster, cluster_source = request.cluster
        # An engine served on one node uses the cluster's head alone (validation refuses
        # more): the fabric between nodes is not its question.
        nodes = 1 if engine.one_node else recipe.parallelism.nodes
        findings += check_fabric(cluster, cluster_source, nodes)
    elif recipe.parallelism.nodes > 1:
        # A plan without a cluster still shows what will run; serving it needs the cluster.
        findings.append(Finding(
            severity=Severity.WARNING, source=source, field="parallelism.nodes",
            message=f"needs {recipe.parallelism.nodes} nodes and no cluster file was given: "
                    "node names and fabric values below are placeholders",
            fix="pass --cluster FILE with one entry per node",
        ))
    raise_on_errors(findings, f"the plan for {recipe.name}")
    return findings


def _model_ref(recipe: Recipe) -> str:
    model = recipe.model
    if model.source is ModelSource.TINY:
        return str(paths.models_dir() / "tiny")
    if model.source is ModelSource.PATH:
        if not model.path:
            raise Sm121Error(f"recipe {recipe.name}: model.source is path but model.path is empty",
                             "set model.path")
        return paths.expand_sm121_home(model.path)
    if not model.hf_id:
        raise Sm121Error(f"recipe {recipe.name}: model.source is hf but model.hf_id is empty",
                         "set model.hf_id")
    return model.hf_id


def _participants(request: PlanRequest) -> list[Node]:
    needed = request.recipe.recipe.parallelism.nodes
    if request.cluster is None:
        return [Node(name="local")] if needed == 1 else [Node(name=f"node{i}")
                                                          for i in range(needed)]
    return request.cluster[0].ordered()[:needed]


def _probe_host(request: PlanRequest, nodes: list[NodePlan]) -> str:
    if request.host not in ("0.0.0.0", "::"):
        return request.host
    return "127.0.0.1" if nodes[0].ssh is None else nodes[0].ssh.split("@")[-1]


def _node_plans(engine: EngineAdapter, request: PlanRequest, effective: EffectiveProfile,
                engine_args: dict[str, ArgValue], own_args: dict[str, ArgValue],
                model_ref: str) -> list[tuple[NodePlan, list[str] | None, list[str]]]:
    """Each node's plan, with the engine args of its final argv (what follows the engine
    command; None for a node that runs no engine, a Ray worker) and its trusted version
    (rendered from `own_args`: what is not checked) for the trust check."""
    recipe = request.recipe.recipe
    nodes = _participants(request)
    cluster = request.cluster[0] if request.cluster else None
    head_ip = nodes[0].fabric_ip or request.host
    known = engine.known_flags(recipe)
    plans = []
    for rank, node in enumerate(nodes):
        where = (rank, len(nodes), head_ip, node.fabric_ip or request.host)
        argv_of = _engine_argv(engine, request, model_ref, known, *where)
        engine_argv, args_at = argv_of(engine_args)
        own, _ = argv_of(own_args)
        argv = engine_argv
        if recipe.runtime.kind == "native" and node.python and argv[0] == "python":
            argv = [node.python, *argv[1:]]
        env, pass_env = _node_env(effective.env, node, len(nodes), engine.host_ip_env)
        container = None
        if recipe.runtime.kind == "docker":
            container = container_name(recipe, node.name)
            argv = docker_argv(recipe, node.name, env, pass_env, argv, home=node.home)
        # The wrappers (docker run, the Ray head's sh) put the engine argv last, unchanged.
        tail = None if args_at is None else argv[len(argv) - len(engine_argv) + args_at:]
        plans.append((NodePlan(
            name=node.name, role="head" if rank == 0 else "worker", rank=rank,
            ssh=cluster.ssh_target(node) if cluster else node.ssh,
            runtime=recipe.runtime.kind, argv=argv, env=env, pass_env=pass_env,
            # The head first (it hosts the rendezvous); then every worker at once.
            start_order=min(rank, 1),
            wait_before_next="first generation" if rank == len(nodes) - 1 else "process started",
            ssh_port=cluster.ssh_port if cluster else None,
            ssh_config=cluster.ssh_config if cluster else None,
            home=node.home, state_dir=cluster.state_dir if cluster else "~/.sm121",
            hf_cache=node.hf_cache,
            container=container,
        ), tail, own[args_at:] if args_at is not None else []))
    return plans


def _engine_argv(engine: EngineAdapter, request: PlanRequest, model_ref: str,
                 known: frozenset[str], rank: int, node_count: int, head_ip: str,
                 node_ip: str) -> Callable[[dict[str, ArgValue]], tuple[list[str], int | None]]:
    """The node's engine argv for a set of engine args, and where the engine's own args start
    in it (after the engine command); None when the node runs no engine (a Ray worker). The
    engine's adapter renders it: its command, parallelism and multi-node flags."""
    def render(engine_args: dict[str, ArgValue]) -> tuple[list[str], int | None]:
        return engine.node_argv(NodeArgvRequest(
            recipe=request.recipe.recipe, model_ref=model_ref, host=request.host,
            port=request.port, args=engine_args, known=known, rank=rank,
            node_count=node_count, head_ip=head_ip, node_ip=node_ip,
            master_port=_master_port(request)))
    return render


def _master_port(request: PlanRequest) -> int:
    return request.cluster[0].master_port if request.cluster else MASTER_PORT


def _node_env(profile_env: dict[str, str], node: Node, node_count: int,
              host_ip_env: str | None) -> tuple[dict[str, str], list[str]]:
    merged = dict(profile_env)
    if node_count > 1:
        merged |= fabric_env(node, host_ip_env)
    secrets = sorted(k for k in merged if is_secret(k))
    return {k: v for k, v in merged.items() if k not in secrets}, secrets


def fabric_env(node: Node, host_ip_env: str | None) -> dict[str, str]:
    """This node's own NCCL values and, under the engine's name (`host_ip_env`), its fabric
    address: never the head's copied over."""
    env = {
        "NCCL_NET": "IB",
        "NCCL_IB_HCA": ",".join(node.hcas),
        "NCCL_SOCKET_IFNAME": node.fabric_if or "",
        "GLOO_SOCKET_IFNAME": node.fabric_if or "",
    }
    if host_ip_env:
        env[host_ip_env] = node.fabric_ip or ""
    return env
