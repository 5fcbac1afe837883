"""Progress of long waits: plain timestamped lines when stderr is not a terminal (logs, CI,
pipes), a live rich display on a terminal."""

from __future__ import annotations

import io
import re
import time

from rich.console import Console

from sm121.cli.progress import LongWait


def _console(terminal: bool) -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, force_terminal=terminal, width=120), out


def test_plain_lines_with_elapsed_time_and_a_heartbeat() -> None:
    console, out = _console(terminal=False)
    with LongWait("booting tiny-cpu", console, heartbeat_s=0.2) as wait:
        wait.say("api up")
        time.sleep(0.7)
    lines = out.getvalue().splitlines()
    assert all(re.match(r"\[\s*\d+\.\d+s\] ", line) for line in lines), lines
    assert "booting tiny-cpu" in lines[0] and "api up" in lines[1]
    assert any(line.endswith("still waiting: api up") for line in lines[2:])
    assert "\x1b[" not in out.getvalue()  # no terminal control codes in a log


def test_counted_work_writes_a_line_per_tenth_not_per_update() -> None:
    console, out = _console(terminal=False)
    with LongWait("bench", console, heartbeat_s=60) as wait:
        for done in range(1001):
            wait.update("decode-rate", done, 1000)
    lines = out.getvalue().splitlines()
    assert 11 <= len(lines) <= 13
    assert lines[-1].endswith("decode-rate (100%)")


def test_a_terminal_gets_a_live_display_and_keeps_the_steps() -> None:
    console, out = _console(terminal=True)
    with LongWait("booting", console) as wait:
        assert wait.live
        wait.say("api up")
        wait.update("first generation", 1, 2)
    text = out.getvalue()
    assert "api up" in text and "\x1b[" in text
    assert not re.search(r"^\[\s*\d+\.\d+s\]", text, re.M)


def test_a_terminals_live_description_is_never_read_as_markup() -> None:
    """The spinner's description is the last line said (tune's quote a resumed tune.json):
    shown as written, `[` and all."""
    console, out = _console(terminal=True)
    with LongWait("booting", console) as wait:
        wait.update("[red]arm[/red] [link=http://x]y", 1, 2)
        time.sleep(0.2)
    assert "[red]arm[/red] [link=http://x]y" in out.getvalue()
