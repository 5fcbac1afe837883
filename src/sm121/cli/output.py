"""Shared CLI output: one console, JSON printing, and how errors reach the user."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel
from rich.console import Console, ConsoleDimensions
from rich.errors import MarkupError
from rich.segment import Segment
from rich.text import Text

from sm121.display import escape

# Output that is not a terminal goes to a file, a pager or another program: there a table
# squeezed to the terminal's width (`recipes list | cat` printed `deepseek-v4-f…`) loses the
# very names a script greps for. Such output is laid out as wide as its content needs.
UNBOUNDED_WIDTH = 100_000


class WholeConsole(Console):
    """A rich console that squeezes tables and wraps lines only on a terminal (or at a width
    it is given; COLUMNS describes a terminal, so it does not count), and that never writes a
    control character it did not make itself."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._fixed_width = kwargs.get("width") is not None

    @property
    def size(self) -> ConsoleDimensions:
        size = Console.size.fget(self)  # type: ignore[attr-defined]
        if self.is_terminal or self._fixed_width:
            return size
        return ConsoleDimensions(UNBOUNDED_WIDTH, size.height)

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        Console.size.fset(self, new_size)  # type: ignore[attr-defined]

    def render_str(self, text: str, **kwargs: Any) -> Text:
        # A printer that put a stranger's `[/bold]` inside markup: printed as plain text,
        # never a MarkupError (display.plain is the way; this is the net under it).
        try:
            return super().render_str(text, **kwargs)
        except MarkupError:
            return super().render_str(text, **{**kwargs, "markup": False})

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        # The last net under every printer: a text segment's hidden characters (ESC, bidi,
        # zero-width, ...) spelled out as display.escape does, whatever the printer passed
        # (a str, a Text, a table cell). rich's own codes (styles, cursor moves) are added
        # here from the style or travel as control segments, which pass unchanged.
        return super()._render_buffer(
            segment if segment.control or segment.text.isprintable()
            else Segment(escape(segment.text, None, keep_newlines=True), segment.style)
            for segment in buffer)


console = WholeConsole()
err_console = WholeConsole(stderr=True)


def print_json(data: Any) -> None:
    if isinstance(data, BaseModel):
        data = data.model_dump(mode="json")
    elif isinstance(data, list):
        data = [d.model_dump(mode="json") if isinstance(d, BaseModel) else d for d in data]
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")


def console_summary(data: dict[str, Any]) -> None:
    """A results file's comparison (ab) or scenario summary, as a rich table."""
    from pydantic import ValidationError
    from rich.table import Table

    from sm121.bench.report.format import table_rows
    from sm121.bench.result_models import ScenarioResults
    from sm121.bench.scenarios import find, parse_results

    summary = data.get("summary") or {}
    try:
        results = parse_results(data)
    except ValidationError:  # a run cut short before its summary fit its model: as it is
        console.print(data.get("summary"))
        return
    scenario = find(results.scenario)
    lines = scenario.console(results.summary) \
        if scenario is not None and isinstance(results, ScenarioResults) else []
    if lines:
        for line in lines:
            console.print(line, highlight=False)
        return
    if summary.get("verdict"):
        console.print(f"best profile by goodput: {summary['verdict']['best']}. "
                      f"{summary['verdict']['why']}", highlight=False)
    headers, rows = table_rows(results)
    if not rows:
        console.print(data.get("summary"))
        return
    table = Table(*headers, title=f"{data['scenario']} ({data['kind']}, {data['status']})")
    for row in rows:
        table.add_row(*row)
    console.print(table)


def parse_sets(values: list[str] | None) -> dict[str, Any]:
    """`--set key=value` pairs; values are YAML scalars, so 0.78 is a float and true a bool;
    a JSON object or list stays the text vLLM's JSON flags take."""
    import yaml

    from sm121.errors import Sm121Error
    from sm121.recipes.schema import normalize_arg

    result: dict[str, Any] = {}
    spelled: dict[str, str] = {}
    for item in values or []:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise Sm121Error(f"--set {item!r} is not key=value",
                             "example: --set max-num-seqs=4")
        value = yaml.safe_load(raw) if raw.strip() else None
        if isinstance(value, dict | list):  # a JSON flag (speculative-config, ...): its text
            value = raw.strip()
        name = normalize_arg(key.strip())
        if name in result:
            raise Sm121Error(f"--set {name} is given twice (as {spelled[name]!r} and "
                             f"{key.strip()!r})", "set each engine arg once")
        spelled[name], result[name] = key.strip(), value
    return result
