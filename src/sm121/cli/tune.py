"""`sm121 tune RECIPE`: measure this hardware's knee, A/B the candidates it suggests on the
agents workload, and write the best as profile `tuned` into the user's recipe."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from sm121.cli.bench_common import free_port
from sm121.cli.options import CLUSTER, HOST, JSON, TRUST
from sm121.cli.output import console, print_json
from sm121.cli.progress import LongWait
from sm121.errors import Sm121Error


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
    agents: int = typer.Option(8, "--agents", help="Agents the A/B runs; the sweep looks "
                               "above (or below) it for the largest N meeting the SLO."),
    turns: int = typer.Option(5, "--turns", help="Turns per agent session."),
    cluster: str | None = CLUSTER,
    host: str = HOST,
    budget: str = typer.Option("25m", "--budget", help="Time for the whole tune (25m, "
                               "1h, 900s): chooses how many candidates and repetitions fit."),
    reps: int = typer.Option(3, "--reps", help="Repetitions per candidate (one boot), at most."),
    max_candidates: int | None = typer.Option(None, "--max-candidates", help="At most this "
                                              "many candidates, whatever the budget allows."),
    sweep_points: int = typer.Option(2, "--sweep-points", help="Agent counts tried beyond "
                                     "--agents per candidate, at most."),
    rest: float = typer.Option(5.0, "--rest", help="Seconds between repetitions on a boot."),
    baselines: str | None = typer.Option(None, "--baselines", help="The recipe's profiles "
                                         "measured as they are (default: its default "
                                         "profile and agent-admission)."),
    steps: str = typer.Option("128,256,512,1024,2048,4096,8192,16384", "--steps",
                              help="Knee: tokens per step."),
    batches: str = typer.Option("1,2,4,8,16,32", "--batches", help="Knee: decode batches."),
    knee_reps: int = typer.Option(3, "--knee-reps", help="Knee: repetitions per size."),
    knee: Path | None = typer.Option(None, "--knee", help="Reuse this `bench knee` results "
                                     "file instead of booting for the knee."),
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
    """Boot RECIPE for its knee, derive candidates (chunk, long-prefill threshold around the
    knee, max-num-seqs around decode saturation, the engine version's own options), A/B them
    on the agents workload beside its background prefill with repetitions per boot, sweep N,
    pick by goodput, then prefill cost, then KV capacity, and write profile `tuned` into
    $SM121_HOME/recipes/RECIPE.yaml (a built-in recipe is never changed)."""
    from sm121.bench.agents.params import agent_params
    from sm121.bench.tune.request import TuneRequest
    from sm121.bench.tune.run import run_tune
    from sm121.durations import parse_duration

    if agents < 1 or reps < 1 or turns < 1 or knee_reps < 1:
        raise Sm121Error("--agents, --reps, --turns and --knee-reps must be at least 1",
                         "example: --agents 8 --reps 3")
    spec = agent_params(agents, turns, None, workload, slo)["workload"]  # checked here
    if cluster is not None:
        from sm121.cluster.spec import load_cluster

        load_cluster(cluster)  # before the tune's folder and state are written
    folder = out or Path(f"tune-{Path(recipe).stem}")
    request = TuneRequest(
        recipe, spec, slo, agents, folder, port or free_port(), parse_duration(budget, "--budget"),
        turns=turns, baselines=[b.strip() for b in baselines.split(",") if b.strip()]
        if baselines is not None else None,
        knee_params={"steps": _ints(steps), "batches": _ints(batches), "reps": knee_reps},
        knee_file=knee, reps=reps, max_candidates=max_candidates, sweep_points=sweep_points,
        rest_s=rest,
        rep_estimate_s=rep_estimate, boot_estimate_s=boot_estimate, cluster=cluster, host=host,
        trust=trust, fresh=fresh, write=not no_write)
    with LongWait(f"tune {recipe}: {workload}, {slo}, {agents} agents") as wait:
        data = run_tune(request, say=wait.say)
    if as_json:
        print_json(data["result"])
        return
    _print(data)


def _print(data: dict[str, Any]) -> None:
    result = data["result"]
    for row in result["table"]:
        mark = " [bold](chosen)[/]" if row["name"] == result["chosen"] else ""
        goodput = "-" if row["goodput"] is None else f"{row['goodput']:.1%}"
        cost = "-" if row["prefill_cost"] is None else f"{row['prefill_cost']:.1%}"
        console.print(f"{row['name']}{mark}: goodput {goodput} over {row['reps']} reps, "
                      f"prefill cost {cost}, KV {row['kv_tokens']}, largest N "
                      f"{row['largest_n']}")
    console.print(f"targets: {result['binding']['text']}", highlight=False)
    console.print(f"report: {data.get('report')}")
    if data.get("written"):
        console.print(f"profile `tuned` written into {data['written']}")
        if data.get("serve_needs_trust"):
            console.print("serving it needs --trust (the copy is not built in): "
                          + "; ".join(data["serve_needs_trust"]), highlight=False)
