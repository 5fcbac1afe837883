"""The `sm121` command: thin typer commands that parse, call the library and print."""

from __future__ import annotations

import os
import signal
import sys

import typer
from rich.text import Text

from sm121 import __version__
from sm121.cli.commands import LazyCommands
from sm121.cli.output import err_console
from sm121.display import plain
from sm121.errors import Sm121Error, shorten_words

# An error's message or hint past this many characters is cut (with a count of the rest): a
# refusal lists every trust item, but a message the size of a file would bury the error.
MESSAGE_LIMIT = 8000

app = typer.Typer(
    name="sm121",
    help="Serve LLMs to coding agents on DGX Spark clusters, and prove with measurements that "
    "the endpoint is fit for agents: plan -> doctor -> serve -> gateway -> bench.",
    cls=LazyCommands,  # the commands, from cli/commands.py's table, load on first use
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # Markdown reflows docstrings, so help text wraps to the terminal instead of the source.
    rich_markup_mode="markdown",
)


def _version(value: bool) -> None:
    if value:
        print(f"sm121 {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                 help="Print the version and exit."),
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks on errors."),
) -> None:
    if debug:
        os.environ["SM121_DEBUG"] = "1"


def _interrupt_on_sigterm() -> None:
    """SIGTERM takes the Ctrl-C path, so whatever sm121 started (an engine still booting, an
    A/B's current profile) is stopped and partial results are kept."""

    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, handler)


def main(args: list[str] | None = None) -> None:
    """The command line with sm121's error handling (exit 2 with the message and its hint),
    without run()'s process-wide SIGTERM handler: tests call this in their own process."""
    try:
        app(args=args, prog_name="sm121")
    except Sm121Error as exc:
        if os.environ.get("SM121_DEBUG"):
            raise
        # Messages quote stranger data: shown as plain text (never markup, hidden characters
        # spelled out; the lines sm121 composed kept), long values shortened, the whole bounded.
        err_console.print(Text.assemble(("error: ", "bold red"), _shown(exc.message)))
        if exc.hint:
            err_console.print(Text.assemble(("hint: ", "yellow"), _shown(exc.hint)))
        sys.exit(2)
    except KeyboardInterrupt:
        err_console.print("interrupted")
        sys.exit(130)


def _shown(text: str) -> Text:
    return plain(shorten_words(text), limit=MESSAGE_LIMIT, keep_newlines=True)


def run() -> None:
    _interrupt_on_sigterm()
    main()


if __name__ == "__main__":
    run()
