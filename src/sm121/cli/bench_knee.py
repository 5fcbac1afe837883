"""`sm121 bench knee`: prefill rate against tokens per step and decode rate against batch,
on a running engine (--url) or on a recipe booted for it (--recipe)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from sm121.bench.results import default_path
from sm121.cli.options import TRUST
from sm121.cli.output import console, parse_sets, print_json
from sm121.cli.progress import LongWait
from sm121.errors import Sm121Error


def register(bench_app: typer.Typer) -> None:
    bench_app.command("knee")(knee)


def _ints(text: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError as exc:
        raise Sm121Error(f"not a list of integers: {text!r}", "example: 128,512,2048") from exc


def knee(
    url: str | None = typer.Option(None, "--url", help="A running engine (its step budget "
                                   "must hold the largest step: pass --chunk)."),
    model: str | None = typer.Option(None, "--model"),
    recipe: str | None = typer.Option(None, "--recipe", help="Boot this recipe for the knee "
                                      "(max-num-batched-tokens = the largest step)."),
    profile: str | None = typer.Option(None, "--profile"),
    sets: list[str] | None = typer.Option(None, "--set", help="Engine arg for the boot."),
    port: int | None = typer.Option(None, "--port", help="Engine port (default: a free one)."),
    steps: str = typer.Option("128,256,512,1024,2048,4096,8192,16384", "--steps",
                              help="Tokens per step (one exact prompt each)."),
    batches: str = typer.Option("1,2,4,8,16,32", "--batches", help="Decode batch sizes."),
    reps: int = typer.Option(3, "--reps", help="Measured repetitions per size."),
    decode_tokens: int = typer.Option(128, "--decode-tokens", help="Tokens per decode stream."),
    chunk: int | None = typer.Option(None, "--chunk", help="--url: the engine's "
                                     "max-num-batched-tokens (larger steps are dropped)."),
    out: Path | None = typer.Option(None, "--out", help="Results JSON."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
    trust: bool = TRUST,
) -> None:
    """The knee: the smallest step within 5% of the peak prefill rate, and where decode
    saturates, in the engine's window (its /metrics) and the client's, with spread."""
    import asyncio

    from sm121.bench.knee import knee as scenario
    from sm121.bench.runner import Target, run_scenario

    if (url is None) == (recipe is None):
        raise Sm121Error("bench knee needs exactly one of --url and --recipe",
                         "--recipe tiny-cpu boots one; --url measures a running engine")
    if reps < 1:
        raise Sm121Error("--reps must be at least 1", "example: --reps 3")
    params: dict[str, Any] = {"steps": _ints(steps), "batches": _ints(batches), "reps": reps,
                              "decode_tokens": decode_tokens}
    path = out or default_path("knee")
    with LongWait("bench knee") as wait:
        if recipe is not None:
            from sm121.bench.knee_run import knee_on_recipe
            from sm121.cli.bench_ab import _free_port

            results = knee_on_recipe(recipe, profile, parse_sets(sets), params, path,
                                     port or _free_port(), trust=trust, say=wait.say)
        else:
            assert url is not None
            results = asyncio.run(run_scenario(
                "knee", scenario, Target(url, model), {**params, "chunk": chunk}, path,
                progress=wait.update))
    summary = results.data["summary"]
    if as_json:
        print_json(summary)
        return
    print_knee(summary)
    console.print(f"results: {path}")


def print_knee(summary: dict[str, Any]) -> None:
    for window in ("engine", "client"):
        part = summary[window]
        k, sat = part["knee"], part["decode_saturation"]
        decode = "saturates at batch" if sat["saturated"] else "not saturated up to batch"
        console.print(f"[bold]{window} window[/]: prefill knee {k['knee_at']} tokens/step "
                      f"({_n(k['knee_rate'])} tok/s; peak {_n(k['peak'])} at {k['peak_at']}); "
                      f"decode {decode} {sat['knee_at']} ({_n(sat['peak'])} tok/s peak)")
        rows = ", ".join(f"{r['step']}: {_n(r['median'])} [{_n(r['min'])}-{_n(r['max'])}]"
                         for r in part["prefill"])
        console.print(f"  prefill tok/s by step (median [min-max]): {rows}", highlight=False)
        rows = ", ".join(f"{r['batch']}: {_n(r['median'])} [{_n(r['min'])}-{_n(r['max'])}]"
                         for r in part["decode"])
        console.print(f"  decode tok/s by batch: {rows}", highlight=False)


def _n(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"
