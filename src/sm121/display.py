"""Stranger strings on a terminal: the one way sm121 shows a value it did not write.

Recipes, cluster files, resume files, endpoint replies and logs hold strings from strangers.
Printed raw, an ESC sequence clears the screen and draws a fake `--trust` list, a bidi
override reverses what a command appears to do, a zero-width character hides a difference,
and `[/bold]` read as rich markup crashes the printer. So a stranger's string is shown:
- with every control or invisible character spelled out (`\\x1b`, `\\u202e`, `\\u200b`): C0,
  DEL, C1, Unicode format characters (bidi controls, zero-width, BOM), line and paragraph
  separators, surrogates and unassigned code points;
- as plain text (a rich `Text`), never read as markup or highlighted (rich's highlighter
  took 331 s on a 250 KB description);
- bounded: past `limit` characters it is cut, with a marker that says how much was left out.

`escape` is the function; `plain` wraps it in a rich Text; the CLI's consoles apply `escape`
to every text segment they write as a last net (cli/output.py), so a printer that forgot is
still safe on the terminal."""

from __future__ import annotations

import unicodedata
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.text import Text

# Long enough for any value a person reads (a hook command, a path, an argv element); a
# 250 KB description is cut to this.
LIMIT = 400
# Unicode categories never shown as themselves: control, format (bidi, zero-width, BOM),
# line/paragraph separators, surrogates, private use and unassigned.
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"})
_SHORT = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


@lru_cache(maxsize=4096)
def _spelled(char: str) -> str | None:
    """The escape for one character, or None when it is shown as itself."""
    if unicodedata.category(char) not in _HIDDEN_CATEGORIES:
        return None
    code = ord(char)
    if char in _SHORT:
        return _SHORT[char]
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def escape(value: object, limit: int | None = LIMIT, keep_newlines: bool = False) -> str:
    """`value` as text safe for a terminal: hidden characters spelled out, cut past `limit`
    characters (None: never cut) with a `…(N more characters)` marker. `keep_newlines` keeps
    `\\n` and `\\t` as themselves (a whole message sm121 composed, whose lines are its own)."""
    text = value if isinstance(value, str) else str(value)
    cut = 0
    if limit is not None and len(text) > limit:
        text, cut = text[:limit], len(text) - limit
    # Line by line: a line str.isprintable() passes whole (C speed), and only a line holding
    # something else is looked at character by character: `sm121 logs` escapes whole engine
    # logs (tests/fixtures' H200 boot log, repeated: 7x faster than a character at a time)
    shown = "".join(_line(piece, keep_newlines) for piece in text.splitlines(keepends=True))
    return f"{shown}…({cut} more characters)" if cut else shown


def _line(piece: str, keep_newlines: bool) -> str:
    body = piece[:-1] if keep_newlines and piece.endswith("\n") else piece
    if body.isprintable():
        return piece
    out: list[str] = []
    for char in piece:
        if char.isprintable() or (keep_newlines and char in "\n\t"):
            out.append(char)
            continue
        spelled = _spelled(char)
        out.append(char if spelled is None else spelled)
    return "".join(out)


def needs_escape(text: str) -> bool:
    """Whether `text` holds a character `escape` would spell out (newlines and tabs aside)."""
    return not all(c.isprintable() or c in "\n\t" or _spelled(c) is None for c in text)


def plain(value: object, limit: int | None = LIMIT, style: str = "",
          keep_newlines: bool = False) -> Text:
    """`escape(value)` as a rich Text: printed as it is, never parsed as markup."""
    from rich.text import Text

    return Text(escape(value, limit, keep_newlines), style=style, end="\n")


def quoted(value: object, limit: int | None = LIMIT) -> str:
    """A value inside a sentence, exact: Python's quoting (backslashes doubled, so `\\x1b`
    typed by hand and a real ESC read differently), then every hidden character spelled out
    (repr leaves some, such as zero-width joiners in identifiers, as themselves)."""
    text = value if isinstance(value, str) else str(value)
    if limit is not None and len(text) > limit:
        return escape(repr(text[:limit]), None) + f"…({len(text) - limit} more characters)"
    return escape(repr(text), None)
