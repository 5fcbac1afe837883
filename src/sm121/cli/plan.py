"""`sm121 plan`: print exactly what will run before it runs."""

from __future__ import annotations

import shlex
from pathlib import Path

import typer
from rich.table import Table
from rich.text import Text

from sm121.cli import capacity as cap
from sm121.cli.options import CLUSTER, HOST, PORT, PROFILE, SET, TRUST
from sm121.cli.output import console, parse_sets, print_json
from sm121.cluster.hosts import ssh_config_hostname
from sm121.display import plain
from sm121.launch.staged_weights import plan_staged
from sm121.plan.build import build_plan
from sm121.plan.model import NodePlan, ServePlan
from sm121.plan.trust import require_trust


def register(app: typer.Typer) -> None:
    @app.command("plan")
    def plan(
        name: str = typer.Argument(..., help="Recipe name or path to a .yaml file."),
        profile: str | None = PROFILE,
        cluster: str | None = CLUSTER,
        sets: list[str] | None = SET,
        port: int = PORT,
        host: str = HOST,
        trust: bool = TRUST,
        as_json: bool = typer.Option(False, "--json", help="Print the ServePlan as JSON."),
        memory: bool = typer.Option(False, "--memory", help="Add the memory plan: KV budget, "
                                    "pool, concurrency (as `sm121 memory plan`)."),
        staged: bool = typer.Option(False, "--staged", help="Also read each node's staged "
                                    "manifest (over ssh): where its weights are read from."),
        agents: int | None = typer.Option(None, "--agents", help="With --workload: how many "
                                          "agents the capacity is judged for (the margin)."),
        workload: str | None = typer.Option(None, "--workload", "-w", help="Add the capacity "
                                            "model: how many agents of this workload (a "
                                            "preset or YAML file) the profile holds, and "
                                            "which resource binds (docs/capacity.md)."),
        turns: int = typer.Option(6, "--turns", "-t", help=cap.TURNS_HELP),
        pool_tokens: int | None = cap.POOL_TOKENS,
        boot_log: Path | None = cap.BOOT_LOG,
        engine_url: str | None = cap.ENGINE_URL,
        slo: str = typer.Option("ttft_p95=2s", "--slo", help="The SLO the turns are judged by."),
        prefill_tok_s: float | None = cap.PREFILL_TOK_S,
        decode_tok_s: float | None = cap.DECODE_TOK_S,
        job_prefill_tok_s: float | None = cap.JOB_PREFILL_TOK_S,
        cold_prefill_tok_s: float | None = cap.COLD_PREFILL_TOK_S,
        max_inflight: int | None = cap.MAX_INFLIGHT,
    ) -> None:
        """Render recipe + profile + cluster + overrides into the ServePlan: for each node the
        exact argv and env, the start order, the readiness probe and the request policy. With
        --workload, also the agents it holds (KV pool, sequences, step budget), before any boot."""
        if workload:
            _plan_capacity(name, profile, cluster, sets, port, host, as_json, trust, cap_args={
                "workload": workload, "turns": turns, "agents": agents, "slo": slo,
                "pool": (pool_tokens, boot_log, engine_url),
                "rate": cap.throughput(prefill_tok_s, decode_tok_s),
                "job_rate": cap.job_rate(job_prefill_tok_s),
                "fresh_rate": cap.fresh_rate(cold_prefill_tok_s), "max_inflight": max_inflight})
            return
        if memory:
            _plan_with_memory(name, profile, cluster, sets, port, host, as_json, trust)
            return
        serve_plan = build_plan(name, profile, cluster, parse_sets(sets), port, host)
        require_trust(serve_plan.recipe, serve_plan.needs_trust, trust)
        where = plan_staged(serve_plan) if staged else None
        if as_json:
            print_json(serve_plan if where is None else
                       {**serve_plan.model_dump(mode="json"), "staged": where})
        else:
            print_plan(serve_plan)
            for node, line in (where or {}).items():
                console.print(plain(f"weights on {node}: {line['reads']}"))


def _plan_with_memory(name: str, profile: str | None, cluster: str | None,
                      sets: list[str] | None, port: int, host: str, as_json: bool,
                      trust: bool) -> None:
    from sm121.cli.memory import print_memory_plan
    from sm121.findings import errors
    from sm121.sizing.with_plan import plan_with_memory

    both = plan_with_memory(name, profile, cluster, parse_sets(sets), port, host)
    if both.serve_plan is not None:
        require_trust(both.serve_plan.recipe, both.serve_plan.needs_trust, trust)
    if as_json:
        print_json({"plan": both.serve_plan.model_dump(mode="json") if both.serve_plan else None,
                    "note": both.note, "memory": both.memory.model_dump(mode="json")})
    else:
        for finding in both.findings:
            console.print(plain(finding.render(), limit=None, style="yellow", keep_newlines=True))
        if both.serve_plan is not None:
            print_plan(both.serve_plan)
            console.print()
        if both.note:
            console.print(Text.assemble(("note: ", "yellow"), plain(both.note)))
        print_memory_plan(both.memory)
    if errors(both.memory.findings):
        raise typer.Exit(1)


def _host_of(node: NodePlan) -> str:
    """The node's ssh target, with the HostName its cluster's ssh_config gives it: where the
    node's start script really goes."""
    alias = (node.ssh or "").rpartition("@")[2]
    real = ssh_config_hostname(node.ssh_config, alias) if node.ssh_config else None
    return f"{node.ssh} (HostName {real})" if real and real != alias else str(node.ssh)


def _plan_capacity(name: str, profile: str | None, cluster: str | None,
                   sets: list[str] | None, port: int, host: str, as_json: bool, trust: bool,
                   cap_args: dict) -> None:
    from sm121.sizing.with_plan import plan_with_memory

    both = plan_with_memory(name, profile, cluster, parse_sets(sets), port, host)
    if both.serve_plan is not None:
        require_trust(both.serve_plan.recipe, both.serve_plan.needs_trust, trust)
    memory = both.memory
    pool_tokens, boot_log, engine_url = cap_args["pool"]
    pool = cap.given_pool(pool_tokens, boot_log, engine_url, memory.block_size)
    capacity = cap.capacity_of(
        dict(both.serve_plan.engine_args) if both.serve_plan else {}, memory.pool_tokens,
        memory.block_size, memory.max_model_len, workload=cap_args["workload"],
        turns=cap_args["turns"], agents=cap_args["agents"], pool=pool, slo=cap_args["slo"],
        rate=cap_args["rate"], max_inflight=cap_args["max_inflight"], engine_url=engine_url,
        job_rate=cap_args["job_rate"], fresh_rate=cap_args["fresh_rate"])
    if as_json:
        print_json({"plan": both.serve_plan.model_dump(mode="json") if both.serve_plan else None,
                    "capacity": cap.capacity_json(capacity)})
        return
    if both.serve_plan is not None:
        print_plan(both.serve_plan)
        console.print()
    cap.print_capacity(capacity)
    tuned = both.serve_plan.measured_on if both.serve_plan else None
    if tuned is not None and capacity.pool is not None:
        from sm121.memory.kv_levers import smaller_pool

        if line := smaller_pool(tuned.pool_tokens, tuned.device, tuned.agents,
                                capacity.pool.tokens):
            console.print(plain(f"warning: {line}", style="yellow"))


def print_plan(plan: ServePlan) -> None:
    """The plan for a person. Everything in it came from a recipe, a cluster file or --set:
    each value is shown through display.plain (hidden characters spelled out, never markup,
    bounded), with sm121's own words around it."""
    console.print(Text.assemble(plain(plan.recipe, style="bold"), " profile ",
                                plain(plan.profile or "-", style="bold"), ": ",
                                plain(plan.purpose)))
    table = Table("engine arg", "value", "from", title="engine args")
    for name, value in plan.engine_args.items():
        origin = ("derived: " + plan.derived[name].how if name in plan.derived
                  else "--set" if name in plan.overrides else "recipe/profile")
        table.add_row(plain(name), plain(str(value)), plain(origin))
    console.print(table)
    for node in sorted(plan.nodes, key=lambda n: n.start_order):
        where = f"ssh {_host_of(node)}" if node.ssh else "this machine"
        console.print()
        console.print(Text.assemble(
            plain(f"{node.start_order + 1}. {node.name}", style="bold"),
            plain(f" ({node.role}, rank {node.rank}, {node.runtime}, {where}); then wait for: "
                  f"{node.wait_before_next}")))
        for key, value in node.env.items():
            console.print(plain(f"  env {key}={value}"))
        for key in node.pass_env:
            console.print(plain(f"  env {key} (secret, passed from your environment)"))
        # The whole argv, however long: it is what runs (hidden characters still spelled out).
        console.print(plain("  " + shlex.join(node.argv), limit=None), soft_wrap=True)
    if plan.hooks.before_serve or plan.hooks.after_ready:
        console.print()
        console.print(plain(f"hooks: before_serve {list(plan.hooks.before_serve)}, "
                            f"after_ready {list(plan.hooks.after_ready)}"))
    probe = plan.readiness
    console.print()
    console.print(plain(f"readiness: POST {probe.url}/v1/completions model={probe.model} "
                        f"max_tokens={probe.max_tokens} (token count checked), timeout "
                        f"{probe.timeout_s:.0f} s"))
    if probe.tools:
        console.print("  then POST /v1/chat/completions with a tool (an agent profile must "
                      "accept tool calls)")
    for param, rule in plan.request_policy.params.items():
        console.print(plain(f"request policy: {param}: {rule.action.value} ({rule.reason}); "
                            f"neutral value passes: {rule.neutral}"))
    if plan.measured_on is not None:
        m = plan.measured_on
        held = f", {m.agents} agents" if m.agents is not None else ""
        console.print(plain(f"tuned on {m.device}: KV pool {m.pool_tokens:,} tokens, workload "
                            f"{m.workload}{held} (a smaller pool holds fewer agents)"))
    # Each item exactly: its stranger values are quoted where the item is made (plan/trust.py),
    # and nothing in a line is cut (the user allows what they read).
    for item in plan.needs_trust:
        console.print(plain(f"allowed by --trust: {item}"))
    for finding in plan.findings:
        console.print(plain(finding.render(), limit=None, style="yellow", keep_newlines=True))
