"""`sm121 startup`: the start-up phases of the last runs, side by side, cold against warm."""

from __future__ import annotations

import typer
from rich.table import Table

from sm121.cli.output import console, print_json
from sm121.launch.startup_history import NodeStartup, StartupRecord, load_history


def register(app: typer.Typer) -> None:
    app.command("startup")(startup)


def startup(
    recipe: str | None = typer.Option(None, "--recipe", "-r", help="Only runs of this recipe."),
    last: int = typer.Option(5, "--last", "-n", help="How many runs to show."),
    node: str | None = typer.Option(None, "--node", help="Phases of this node (default: the "
                                    "head)."),
    as_json: bool = typer.Option(False, "--json", help="Print the records as JSON."),
) -> None:
    """Start-up phases per run: hooks, process start, weights (with s/shard), compile (and
    whether its cache was hit), graph capture, API up, first generation."""
    records = load_history(recipe, last)
    if as_json:
        print_json(records)
        return
    if not records:
        console.print("no start-ups recorded yet (sm121 serve records each one)")
        return
    table = Table("phase", *(f"{r.run_id}\n{r.start}"
                             + (f", restart {r.restart}" if r.restart else "") for r in records),
                  title="start-up, seconds since the launch began unless marked")
    table.columns[0].no_wrap = True
    for label, value in ROWS:
        table.add_row(label, *(value(r, _node(r, node)) for r in records))
    console.print(table)


def _node(record: StartupRecord, name: str | None) -> NodeStartup | None:
    nodes = [n for n in record.nodes if (n.name == name if name else n.role == "head")]
    return nodes[0] if nodes else None


def _s(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


ROWS = [
    ("hooks (before_serve)", lambda r, n: _s(n.hooks_s if n else r.hooks_s)),
    ("process started", lambda r, n: _s(n.process_started_s if n else r.process_started_s)),
    ("weights load (duration)", lambda r, n: _s(n.phases.weights_s) if n else "-"),
    ("  shards, s/shard", lambda r, n: f"{n.phases.shards}, {n.phases.s_per_shard:.2f}"
     if n and n.phases.shards and n.phases.s_per_shard is not None else "-"),
    ("compile (duration)", lambda r, n: _s(n.phases.compile_s) if n else "-"),
    ("  compile cache", lambda r, n: (n.phases.compile_cache or "-") if n else "-"),
    ("graph capture (duration)", lambda r, n: _s(n.phases.graph_capture_s) if n else "-"),
    ("engine init (duration)", lambda r, n: _s(n.phases.init_engine_s) if n else "-"),
    ("API up", lambda r, n: _s(r.api_up_s)),
    ("first generation", lambda r, n: _s(r.first_generation_s)),
]
