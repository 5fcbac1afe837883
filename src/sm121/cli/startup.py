"""`sm121 startup`: where each second of a start went, the last runs side by side (cold against
warm), as a table and, with --plot, a PNG."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table
from rich.text import Text

from sm121.cli.output import console, print_json
from sm121.display import plain
from sm121.engines.registry import adapter_of
from sm121.errors import Sm121Error
from sm121.launch.startup_history import StartupRecord, load_history, waterfall_of
from sm121.launch.startup_waterfall import (
    PHASES,
    LauncherClock,
    Waterfall,
    build_waterfall,
)


def register(app: typer.Typer) -> None:
    app.command("startup")(startup)


def startup(
    recipe: str | None = typer.Option(None, "--recipe", "-r", help="Only runs of this recipe."),
    last: int = typer.Option(5, "--last", "-n", help="How many runs to show."),
    node: str | None = typer.Option(None, "--node", help="The engine's own figures of this node "
                                    "(default: the head; the waterfall is the head's)."),
    logs: list[Path] | None = typer.Option(None, "--log", help="A vLLM log file instead of the "
                                           "recorded runs (repeatable); its own stamps only."),
    steps: bool = typer.Option(False, "--steps", help="Also list every step of each waterfall."),
    plot: Path | None = typer.Option(None, "--plot", help="Write the waterfalls as a PNG here."),
    as_json: bool = typer.Option(False, "--json", help="Print the records as JSON."),
) -> None:
    """Every second from the launch to the first generation in a named phase: imports and
    config, engine core start, weight loading (s/shard), torch.compile (cache hit or miss),
    warm-up and profiling, KV allocation, CUDA-graph capture, API server start, API up, first
    generation; the rest is "unattributed". The engine log's stamps are joined to the
    launcher's own clock."""
    if logs:
        names = [p.name for p in logs]
        starts = [(p.name if names.count(p.name) == 1 else f"{p.parent.name}/{p.name}", _from_log(p))
                  for p in logs]
        if as_json:
            print_json([{"log": label, **w.model_dump(mode="json")} for label, w in starts])
            return
        _show(starts, [], steps, plot)
        return
    records = load_history(recipe, last)
    if as_json:
        print_json(records)
        return
    if not records:
        console.print("no start-ups recorded yet (sm121 serve records each one)")
        return
    starts = [(f"{r.run_id}\n{r.start}" + (f", restart {r.restart}" if r.restart else ""),
               waterfall_of(r) or Waterfall(notes=["no engine log"]))
              for r in records]
    _show(starts, [_figures(r, node) for r in records], steps, plot)


def _from_log(path: Path) -> Waterfall:
    if not path.is_file():
        raise Sm121Error(f"no log file {path}", "give the path of a vLLM engine log")
    text = path.read_text(errors="replace")
    # A log file given by path, no plan at hand: it meets the default engine's reader here.
    engine = adapter_of()
    return build_waterfall(text, LauncherClock(), engine.parse_phases(text), engine=engine)


def _show(starts: list[tuple[str, Waterfall]], figures: list[str], steps: bool,
          plot: Path | None) -> None:
    table = Table("phase", *(label for label, _ in starts),
                  title="start-up waterfall, seconds (launcher clock joined to the log's stamps)")
    table.columns[0].no_wrap = True
    totals = [w.phase_seconds() for _, w in starts]
    for phase in PHASES:
        if any(phase in t for t in totals):
            table.add_row(phase, *(_s(t.get(phase)) for t in totals))
    table.add_row("total (launch to first generation when joined)", *(_s(w.total_s) for _, w in starts))
    table.add_row("named", *(f"{w.named_share:.1%}" for _, w in starts))
    console.print(table)
    for (label, waterfall), extra in zip(starts, figures or [""] * len(starts), strict=True):
        lines = [*waterfall.notes, *([extra] if extra else [])]
        console.print(Text.assemble(plain(label.splitlines()[0], style="bold"), ": ",
                                    plain("\n  ".join(lines), None, keep_newlines=True)))
        if steps:
            for s in waterfall.segments:
                console.print(f"  {s.start_s:8.2f} {s.end_s:8.2f} {s.seconds:7.2f}  "
                              f"{s.phase}: {s.step}")
    if plot is not None:
        from sm121.launch.startup_plot import waterfall_png

        labels = [label.replace("\n", " ") for label, _ in starts]
        path = waterfall_png(list(zip(labels, [w for _, w in starts], strict=True)), plot)
        console.print(f"wrote {path}")


def _figures(record: StartupRecord, name: str | None) -> str:
    """Hooks and the engine's own per-node figures (s/shard, compile cache) of one node."""
    nodes = [n for n in record.nodes if (n.name == name if name else n.role == "head")]
    if not nodes:
        return f"no node {name!r} in this run" if name else ""
    n = nodes[0]
    rate = (f"{n.phases.shards} shards, {n.phases.s_per_shard:.2f} s/shard"
            if n.phases.shards and n.phases.s_per_shard is not None else "s/shard -")
    return (f"node {n.name}: hooks {_s(n.hooks_s)} s, process started {_s(n.process_started_s)} s, "
            f"{rate}, compile cache {n.phases.compile_cache or '-'}")


def _s(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"
