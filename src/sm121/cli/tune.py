"""`sm121 tune RECIPE`: search the scheduler knobs one at a time against a baseline, rank the
arms by measured capacity (the most agents meeting the SLO, bracketed by bisection), and write
the best as profile `tuned` into the user's recipe."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from sm121.cli.options import CLUSTER, HOST, JSON, TRUST
from sm121.cli.output import console, print_json
from sm121.cli.progress import LongWait
from sm121.display import plain
from sm121.errors import Sm121Error
from sm121.free_ports import free_port

if TYPE_CHECKING:
    from sm121.bench.tune.result import TuneRecord


def register(app: typer.Typer) -> None:
    app.command("tune")(tune)


def _ints(text: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError as exc:
        raise Sm121Error(f"not a list of integers: {text!r}", "example: 128,512,2048") from exc


def tune(
    recipe: str = typer.Argument(..., help="Recipe name or path (served on this machine, or "
                                 "on --cluster's nodes)."),
    workload: str = typer.Option("coding-agent-with-batch", "--workload", help="Agents "
                                 "workload: a preset or a YAML file (`bench agents --help`)."),
    slo: str = typer.Option("ttft_p95=2s", "--slo", help="The SLO goodput is judged by."),
    agents: int = typer.Option(8, "--agents", help="Agents every arm's repetitions run at; "
                               "the capacity bisection searches around it on the same boot."),
    max_agents: int | None = typer.Option(None, "--max-agents", help="The most agents the "
                                          "capacity search tests (default 4x --agents); every "
                                          "arm's max-num-seqs holds it + 1."),
    turns: int = typer.Option(5, "--turns", help="Turns per agent session."),
    cluster: str | None = CLUSTER,
    host: str = HOST,
    budget: str = typer.Option("25m", "--budget", help="Time for the whole tune (25m, "
                               "1h, 900s): re-planned before every boot from the measured "
                               "boot and run times."),
    reps: int = typer.Option(3, "--reps", help="Repetitions per arm at --agents "
                        "(one boot), at most."),
    max_candidates: int | None = typer.Option(None, "--max-candidates", help="At most this "
                                              "many arms (in priority order: the baseline, "
                                              "the reference, the one-knob arms, the fp8 KV "
                                              "arm, the engine's defaults; arms predicted "
                                              "below "
                                              "--agents last), whatever the budget allows."),
    sweep_points: int = typer.Option(2, "--sweep-points", help="Capacity probes "
                                     "(one agents run at another N, on the arm's boot) per "
                                     "arm, at most."),
    boots: int = typer.Option(3, "--boots", help="When the budget leaves room after every "
                              "arm: boots per finalist (the chosen arm and the baseline, "
                              "interleaved), each one run at --agents and one at a second N, "
                              "for claims over boots; 1: none."),
    rest: float = typer.Option(5.0, "--rest", help="Seconds between repetitions on a boot."),
    baselines: str | None = typer.Option(None, "--baselines", help="Recipe profiles "
                                         "measured as arms (seqs raised); the first is the "
                                         "baseline (default: the recipe's default profile)."),
    steps: str = typer.Option("128,256,512,1024,2048,4096,8192,16384", "--steps",
                              help="Knee: tokens per step."),
    batches: str = typer.Option("1,2,4,8,16,32", "--batches", help="Knee: decode batches."),
    knee_reps: int = typer.Option(3, "--knee-reps", help="Knee: repetitions per size."),
    knee: Path | None = typer.Option(None, "--knee", help="Reuse this `bench knee` results "
                                     "file instead of booting for the knee (shown in the "
                                     "report; it prices nothing)."),
    rep_estimate: float = typer.Option(60.0, "--rep-estimate", help="Seconds one agents run "
                                       "is assumed to take until one is measured."),
    boot_estimate: float | None = typer.Option(None, "--boot-estimate", help="Seconds a warm "
                                               "boot is assumed to take until one is measured "
                                               "(default: the knee's boot, which may be cold)."),
    out: Path | None = typer.Option(None, "--out", help="Folder for the results, the state "
                                    "and the report (default: tune-RECIPE); a rerun resumes."),
    port: int | None = typer.Option(None, "--port", help="Engine port (default: a free one)."),
    fresh: bool = typer.Option(False, "--fresh", help="Start over instead of resuming."),
    no_write: bool = typer.Option(False, "--no-write", help="Measure and report only."),
    as_json: bool = JSON,
    trust: bool = TRUST,
) -> None:
    """Boot RECIPE for its (short-context) knee, then measure arms that change one scheduler
    knob at a time against a baseline (max-num-seqs alone; the long-prefill threshold 512,
    1024, 2048; the step budget 2048, 4096, 8192), a reference arm (chunk 8192, no threshold)
    and the engine's defaults, and where the knee's pool says KV binds, the baseline with fp8
    KV (vLLM; llama.cpp has no fp8 KV type, which tune says). On llama.cpp the knobs are its
    own: slots -np (the context -c grows with them, so each agent keeps its window), the step
    budget -b, the micro-batch -ub 256, 1024, 2048 and --kv-unified; it has no long-prefill
    threshold (those arms are dropped, saying why). Each arm on one boot, its repetitions at
    --agents beside the workload's long background prefill, then a capacity search on the same
    boot around its predicted capacity. Arms predicted to hold fewer than --agents are
    measured last, and dropped first when the budget runs short (docs/capacity.md). Arms are
    ranked by the capacity bracket (lo <= N* < hi), the long prefill's cost in the agents runs
    against the reference arm within 5%, then goodput's Clopper-Pearson lower bound. The plan
    is re-made before every boot from the measured times; what the budget leaves buys
    interleaved boots of the two finalists (--boots), for claims over boots. The chosen arm
    is written as profile `tuned` into $SM121_HOME/recipes/RECIPE.yaml (a built-in recipe is
    never changed)."""
    from sm121.bench.scenarios.agents.params import agent_params
    from sm121.bench.tune.request import TuneRequest
    from sm121.bench.tune.run import run_tune
    from sm121.durations import parse_duration
    from sm121.recipes.loader import load_recipe

    if max_agents is not None and max_agents < agents:
        raise Sm121Error(f"--max-agents {max_agents} is below --agents {agents}",
                         "the capacity search tests from --agents up to --max-agents")
    if agents < 1 or reps < 1 or turns < 1 or knee_reps < 1 or boots < 1:
        raise Sm121Error("--agents, --reps, --turns, --knee-reps and --boots must be at "
                         "least 1", "example: --agents 8 --reps 3")
    spec = agent_params(agents, turns, None, workload, slo).workload  # checked here
    # The recipe and cluster file are read (and a stranger's refused) before the tune's folder
    # and state are written
    load_recipe(recipe)
    if cluster is not None:
        from sm121.cluster.spec import load_cluster

        load_cluster(cluster)
    folder = out or Path(f"tune-{Path(recipe).stem}")
    request = TuneRequest(
        recipe, spec, slo, agents, folder, port or free_port(), parse_duration(budget, "--budget"),
        turns=turns, baselines=[b.strip() for b in baselines.split(",") if b.strip()]
        if baselines is not None else None,
        knee_params={"steps": _ints(steps), "batches": _ints(batches), "reps": knee_reps},
        knee_file=knee, reps=reps, max_candidates=max_candidates, sweep_points=sweep_points,
        max_agents=max_agents, boots=boots, rest_s=rest,
        rep_estimate_s=rep_estimate, boot_estimate_s=boot_estimate, cluster=cluster, host=host,
        trust=trust, fresh=fresh, write=not no_write)
    with LongWait(f"tune {recipe}: {workload}, {slo}, {agents} agents") as wait:
        record = run_tune(request, say=wait.say)
    if as_json:
        print_json(record.chosen().model_dump(mode="json"))
        return
    _print(record, folder)


def _print(record: TuneRecord, folder: Path) -> None:
    from sm121.bench.tune.run import predicted_lines

    result = record.chosen()
    for row in result.table:
        mark = " (chosen)" if row.name == result.chosen else ""  # names read back from disk
        goodput = "-" if row.goodput is None else f"{row.goodput:.1%}"
        ci = row.goodput_ci
        interval = f" [{ci[0]:.1%}, {ci[1]:.1%}]" if ci else ""
        cost = "-" if row.prefill_cost is None else f"{row.prefill_cost:.1%}"
        differs = ", ".join(row.differs) or "baseline"
        console.print(plain(f"{row.name}{mark} ({differs}): capacity {row.capacity.text}; "
                            f"goodput {goodput}{interval} over {row.reps} reps; prefill cost "
                            f"{cost} vs {row.prefill_reference or '-'}", None))
    for line in predicted_lines(record, folder):  # arm names read back from disk
        console.print(plain(line, None))
    for item in result.claims:
        console.print(plain(item.text, None))
    console.print(plain(f"targets: {result.binding.text}", None))
    console.print(plain(f"report: {record.report}", None))
    if record.written:
        console.print(plain(f"profile `tuned` written into {record.written}", None))
        if record.serve_needs_trust:
            console.print(plain("serving it needs --trust (the copy is not built in): "
                                + "; ".join(record.serve_needs_trust), None))
