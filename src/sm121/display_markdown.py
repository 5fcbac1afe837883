"""Stranger strings in a Markdown document: the one way sm121 writes a value it did not write
into a report (.md).

A results file, an endpoint's reply or an engine's log line may carry anything. Written raw
into Markdown, an ESC sequence runs when a person `cat`s the report in a terminal; a newline
ends a table row or the paragraph, and `# x` after it is a heading; `|` adds a table cell;
`<img onerror=...>` is raw HTML, `[x](url)` a link that hides where it goes, `` ` `` opens a
code span that swallows the rest of the line. So a stranger's string (`inert`):

1. is cut past `limit` characters, with a marker that says how much was left out;
2. has every control or invisible character spelled out, newlines and tabs included, as
   `display.escape` does on a terminal (`\\x1b`, `\\n`, `\\u202e`): it stays on its line, and
   no byte of it drives a terminal;
3. is then inert Markdown (GitHub-flavoured, CommonMark's rules). Allow-list: letters,
   digits and marks of any script, spaces, every other printable non-ASCII character, and the
   ASCII punctuation  ! " % ' ( ) , . / : ; ? @ ^ { } ]  pass as themselves anywhere, and
   # + - = (which open a block only where a line starts) pass after the value's first
   character. The rest is escaped:
   - `\\` `` ` `` `*` `[` `|` `~` `$` always, with a backslash (`\\|` keeps a table cell whole;
     `[` escaped is no link, image or footnote; `~` no strikethrough, `$` no math on GitHub);
   - `_` with a backslash, except inside a word (`max_tokens`: between two letters or
     digits an underscore cannot open or close emphasis);
   - `<` `>` `&` as `&lt;` `&gt;` `&amp;`: no raw HTML, autolink or entity, and no `<` byte
     for a renderer that passes HTML through without CommonMark's rules;
   - where the value starts (its first non-blank character): `#` `-` `+` `=` with a
     backslash (no heading, list item, setext underline or thematic break), and the `.` or `)`
     of `1.`/`1)` followed by a blank (no ordered list item).
   A value an sm121 name, number or version is made of (`Qwen/Qwen3-8B`, `coding-agent`,
   `ttft_p95=2s`, `0.21.0`) comes out unchanged. A URL stays text (GitHub may autolink it;
   the link shows the URL itself).

`code=True` writes the value as an inline code span instead (fences included): literal on
GitHub and in a terminal, for values read as code (a params dict, an SLO, a metric name).
Inside it nothing is markup, so only steps 1-2 apply, the fence is longer than any run of
backticks in the value, and `|` is `\\|` (a GFM table splits cells on `|` even inside code;
outside a table the backslash shows, which only a value holding `|` meets).

`document` is the last net over a whole report before it is written, as the CLI's consoles
have one (cli/output.py): whatever a writer forgot to pass through `inert`, no control
character but the document's own newlines and tabs reaches the file."""

from __future__ import annotations

import re

from sm121.display import escape

# A report's cell or sentence: long enough for an error message or an engine's reason; a
# stranger's megabyte is cut to this.
LIMIT = 2000
_BACKSLASHED = frozenset("\\`*[|~$")
_ENTITIES = {"<": "&lt;", ">": "&gt;", "&": "&amp;"}
_OPENS_BLOCK = frozenset("#-+=")
_ORDERED = re.compile(r"[0-9]+[.)](?=[ \t]|\Z)")
_BLANK = " \t"


def inert(value: object, limit: int | None = LIMIT, *, code: bool = False) -> str:
    """`value` as Markdown that shows it and does nothing else (the module says how)."""
    text = value if isinstance(value, str) else str(value)
    cut = 0
    if limit is not None and len(text) > limit:
        text, cut = text[:limit], len(text) - limit
    shown = _code_span(text) if code else escape(_markdown_text(text), None)
    return f"{shown}…({cut} more characters)" if cut else shown


def document(text: str) -> str:
    """A whole Markdown document as it is written: control characters other than its newlines
    and tabs spelled out (the net under `inert`)."""
    return escape(text, None, keep_newlines=True)


def _markdown_text(text: str) -> str:
    start = len(text) - len(text.lstrip(_BLANK))
    ordered = _ORDERED.match(text, start)
    marker = ordered.end() - 1 if ordered else -1
    out: list[str] = []
    for index, char in enumerate(text):
        if char in _ENTITIES:
            out.append(_ENTITIES[char])
        elif (char in _BACKSLASHED or index == marker
              or (index == start and char in _OPENS_BLOCK)
              or (char == "_" and not _inside_word(text, index))):
            out.append("\\" + char)
        else:
            out.append(char)
    return "".join(out)


def _inside_word(text: str, index: int) -> bool:
    return 0 < index < len(text) - 1 and text[index - 1].isalnum() and text[index + 1].isalnum()


def _code_span(text: str) -> str:
    shown = escape(text, None).replace("|", "\\|")
    if not shown:
        return "` `"
    fence = "`" * (max((len(run) for run in re.findall("`+", shown)), default=0) + 1)
    # CommonMark strips one space from each end of a span that has one at both (and is not
    # all spaces): pad, so a value that starts or ends with a backtick or a space keeps it
    pad = " " if shown.strip(" ") and (shown[0] in "` " or shown[-1] in "` ") else ""
    return f"{fence}{pad}{shown}{pad}{fence}"
