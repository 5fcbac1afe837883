"""What every `sm121 bench` command shares: the common options, the progress bar and running
one registered scenario against a URL. The bench command modules import this one; the
`bench` group (`cli/bench.py`) imports them, never the other way round."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from sm121.bench.results import default_path
from sm121.bench.scenarios import get
from sm121.cli.output import console, console_summary, print_json
from sm121.cli.progress import LongWait
from sm121.engines.api_key import api_key

if TYPE_CHECKING:
    from sm121.progress import Progress as ProgressFn

URL = typer.Option(..., "--url", help="Base URL of the OpenAI-compatible server.")
MODEL = typer.Option(None, "--model", help="Served model (default: the first of /v1/models).")
OUT = typer.Option(None, "--out", help="Results JSON (default: bench-results/SCENARIO-TIME.json).")
NO_STREAM = typer.Option(False, "--no-stream", help="Fallback for servers without token ids: "
                         "stream:false, tokens from usage, no per-token timing.")
AS_JSON = typer.Option(False, "--json", help="Print the summary as JSON.")
API = typer.Option(None, "--api", help="completions or chat (default: the scenario's own; "
                   "agents speak chat). Exact-length prompts are exact over completions; chat "
                   "adds the template's tokens. agents also speak messages (Anthropic, Claude "
                   "Code's) and responses (Codex's): the same workload, prompts exact.")


def ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


@contextmanager
def progress_bar(title: str = "bench") -> Iterator[ProgressFn]:
    with LongWait(title) as wait:
        yield wait.progress


def run_cli_scenario(name: str, url: str, model: str | None, out: Path | None,
                     no_stream: bool, params: dict[str, Any], as_json: bool,
                     api: str | None = None) -> None:
    # The runner (aiohttp) is imported here: every `sm121` command builds the bench command
    # table, and on a saturated host aiohttp's import alone took seconds.
    from sm121.bench.runner import Target, run_scenario
    from sm121.bench.scenarios.agents.apis import check_api

    check_api(name, api)
    spec = get(name)
    path = out or default_path(name)
    target = Target(url, model, stream=not no_stream, api_key=api_key(engine_first=False),
                    api=api or spec.api)
    with progress_bar(f"bench {name}") as update:
        results = asyncio.run(run_scenario(spec, target, params, path, progress=update))
    if as_json:
        print_json(results.summary.model_dump(mode="json", exclude_unset=True, by_alias=True))
    else:
        console_summary(results.to_json())
        console.print(f"results: {path}")
