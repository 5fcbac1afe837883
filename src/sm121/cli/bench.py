"""`sm121 bench`: measure an OpenAI-compatible endpoint for agents, A/B profiles, report."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from sm121.bench.results import default_path
from sm121.cli.output import console, print_json
from sm121.cli.progress import LongWait
from sm121.engines.api_key import api_key
from sm121.errors import Sm121Error

if TYPE_CHECKING:
    from sm121.bench.runner import Progress as ProgressFn

bench_app = typer.Typer(help="Token-accurate measurements of prefill, decode and admission; "
                        "A/B across profiles; reports with plots.", no_args_is_help=True)

URL = typer.Option(..., "--url", help="Base URL of the OpenAI-compatible server.")
MODEL = typer.Option(None, "--model", help="Served model (default: the first of /v1/models).")
OUT = typer.Option(None, "--out", help="Results JSON (default: bench-results/SCENARIO-TIME.json).")
NO_STREAM = typer.Option(False, "--no-stream", help="Fallback for servers without token ids: "
                         "stream:false, tokens from usage, no per-token timing.")
AS_JSON = typer.Option(False, "--json", help="Print the summary as JSON.")
API = typer.Option(None, "--api", help="completions or chat (default: the scenario's own; "
                   "agents speak chat). Exact-length prompts are exact over completions; chat "
                   "adds the template's tokens.")


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def _floats(text: str) -> list[float]:
    return [float(x) for x in text.split(",") if x.strip()]


def register(app: typer.Typer) -> None:
    # ab and report; agent-check; agents, replay and sweep; soak
    from sm121.cli import bench_ab, bench_agent_check, bench_agents, bench_soak

    bench_ab.register(bench_app)
    bench_agent_check.register(bench_app)
    bench_agents.register(bench_app)
    bench_soak.register(bench_app)
    app.add_typer(bench_app, name="bench")


@contextmanager
def progress_bar(title: str = "bench") -> Iterator[ProgressFn]:
    with LongWait(title) as wait:
        yield wait.update


def run_cli_scenario(name: str, url: str, model: str | None, out: Path | None,
                     no_stream: bool, params: dict[str, Any], as_json: bool,
                     api: str | None = None) -> None:
    # The scenarios and the runner (aiohttp) are imported here: every `sm121` command loads
    # this module, and on a saturated host aiohttp's import alone took seconds.
    from sm121.bench.runner import Target, run_scenario
    from sm121.bench.scenarios import SCENARIOS

    spec = SCENARIOS[name]
    path = out or default_path(name)
    target = Target(url, model, stream=not no_stream, api_key=api_key(engine_first=False),
                    api=api or spec.api)
    with progress_bar(f"bench {name}") as update:
        results = asyncio.run(run_scenario(name, spec.run, target, params, path, update,
                                           needs_stream=spec.needs_stream))
    if as_json:
        print_json(results.data["summary"])
    else:
        from sm121.cli.output import console_summary

        console_summary(results.data)
        console.print(f"results: {path}")


@bench_app.command("probe")
def probe(url: str = URL, model: str | None = MODEL, out: Path | None = OUT,
          as_json: bool = AS_JSON) -> None:
    """Does this server report token ids, and how many tokens does a chunk carry? Exits 1
    when streams cannot be counted safely."""
    from sm121.bench.client import BenchClient
    from sm121.bench.probe import probe_server
    from sm121.bench.results import ResultsFile
    from sm121.bench.runner import resolve_model

    async def go() -> dict[str, Any]:
        async with BenchClient(url, await resolve_model(url, model)) as client:
            return await probe_server(client)

    report = asyncio.run(go())
    results = ResultsFile(out or default_path("probe"), "scenario", "probe", {})
    results.set(probe=report, summary=report)
    results.finish("complete")
    if as_json:
        print_json(report)
    else:
        verdict = "[green]safe[/]" if report["safe"] else f"[red]unsafe[/]: {report['reason']}"
        console.print(f"token ids: {report.get('token_ids')}; counting: {verdict}")
        console.print(f"tokens per chunk (histogram): {report.get('histogram')}, mean "
                      f"{report.get('tokens_per_chunk')}; cache_salt: {report.get('cache_salt')}")
        for name, check in (report.get("apis") or {}).items():
            state = "[green]ok[/]" if check["ok"] else f"[red]refused[/]: {check['reason']}"
            console.print(f"{name}: {state}")
    if not report["safe"]:
        raise typer.Exit(1)


@bench_app.command("overlap")
def overlap(
    url: str = URL, model: str | None = MODEL, out: Path | None = OUT,
    prefill_tokens: int = typer.Option(32768, "--prefill-tokens", "-L",
                                       help="Long prompt length, exact to the token."),
    short_at: str = typer.Option("0.25,0.5", "--short-at", help="Short requests at these "
                                 "fractions of the predicted prefill."),
    before_s: float = typer.Option(5.0, "--before", help="Seconds of undisturbed baseline."),
    reps: int = typer.Option(1, "--reps", help="Repetitions (median and spread)."),
    as_json: bool = AS_JSON, api: str | None = API,
) -> None:
    """Interference and admission: one ongoing stream (its own baseline), a long prefill of
    exactly L tokens, short requests during it."""
    run_cli_scenario("overlap", url, model, out, False, {
        "prefill_tokens": prefill_tokens, "short_at": _floats(short_at), "before_s": before_s,
        "reps": reps}, as_json, api)


@bench_app.command("decode-scaling")
def decode_scaling(
    url: str = URL, model: str | None = MODEL, out: Path | None = OUT,
    n: str = typer.Option("1,2,4,6", "--n", help="Concurrency levels."),
    max_tokens: int = typer.Option(256, "--max-tokens"), no_stream: bool = NO_STREAM,
    as_json: bool = AS_JSON, api: str | None = API,
) -> None:
    """Aggregate and per-stream decode rates, TTFT, p50/p95 intervals over N streams."""
    run_cli_scenario("decode-scaling", url, model, out, no_stream,
                     {"n": _ints(n), "max_tokens": max_tokens}, as_json, api)


@bench_app.command("prefill-scaling")
def prefill_scaling(
    url: str = URL, model: str | None = MODEL, out: Path | None = OUT,
    n: str = typer.Option("1,2,4,6", "--n", help="Concurrency levels."),
    prompt_tokens: int = typer.Option(4096, "--prompt-tokens"), no_stream: bool = NO_STREAM,
    as_json: bool = AS_JSON, api: str | None = API,
) -> None:
    """Prompt tokens per second with N concurrent prefills."""
    run_cli_scenario("prefill-scaling", url, model, out, no_stream,
                     {"n": _ints(n), "prompt_tokens": prompt_tokens}, as_json, api)


@bench_app.command("locality")
def locality(
    url: str = URL, model: str | None = MODEL, out: Path | None = OUT,
    turns: int = typer.Option(4, "--turns"),
    base_words: int = typer.Option(1200, "--base-words", help="Size of the first prompt."),
    as_json: bool = AS_JSON, api: str | None = API,
) -> None:
    """Cost of a mutating field at clean/bottom/middle/top over several turns."""
    run_cli_scenario("locality", url, model, out, False,
                     {"turns": turns, "base_words": base_words}, as_json, api)


@bench_app.command("retrieval")
def retrieval(
    url: str = URL, model: str | None = MODEL, out: Path | None = OUT,
    lengths: str = typer.Option("4096,16384", "--lengths", help="Context lengths (tokens)."),
    depths: str = typer.Option("0.08,0.5,0.92", "--depths"), no_stream: bool = NO_STREAM,
    as_json: bool = AS_JSON, api: str | None = API,
) -> None:
    """Needles at depths with distractor codes: found and distractors returned."""
    if not lengths.strip():
        raise Sm121Error("--lengths is empty", "example: --lengths 4096,16384")
    run_cli_scenario("retrieval", url, model, out, no_stream,
                     {"lengths": _ints(lengths), "depths": _floats(depths)}, as_json, api)
