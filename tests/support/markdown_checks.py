"""How a test reads a Markdown report sm121 wrote from a stranger's strings: as bytes (no
control character but the document's newlines, every table row as many cells as its header,
`<img` only inside code spans) and as GitHub reads it (a CommonMark parser with GFM tables,
raw HTML on: no element, heading or link the stranger wrote, and the stranger's text shown
spelled out). Used by tests/security/test_stranger_markdown.py and
test_stranger_tune_report.py."""

from __future__ import annotations

import re

from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml

from support.hostile_text import HOSTILE

# Every hostile string in one, starting as a heading would (a value may start a line)
STRANGER = "# h1 " + " ".join(HOSTILE.values())
# How STRANGER starts once inert: its heading marker escaped, the OSC sequence spelled out
START = "\\# h1 \\x1b]0;pwn\\x07"
PARSER = MarkdownIt("commonmark").enable(["table", "strikethrough"])
_CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]")  # newlines are the document's own
_UNESCAPED_PIPE = re.compile(r"(?<!\\)(?:\\\\)*\|")
_CODE_SPAN = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)")


def check_bytes(data: bytes) -> str:
    text = data.decode()
    assert not _CONTROL.search(text), _CONTROL.findall(text)[:5]
    for number, line in enumerate(text.splitlines(), 1):
        assert "<img" not in _CODE_SPAN.sub("", line), (number, line)
    check_tables(text)
    return text


def check_tables(text: str) -> None:
    """Every table row has as many cells as the header of its table."""
    tables = re.findall(r"(?m)(?:^\|.*\n)+", text)
    assert tables
    for table in tables:
        rows = table.splitlines()
        counts = [len(_UNESCAPED_PIPE.findall(row)) for row in rows]
        assert len(set(counts)) == 1, (table, counts)


def check_rendered(text: str, headings: set[str], shown: str) -> str:
    """The document as GitHub reads it: the stranger's text shown, none of its markup (the
    only images are sm121's plots beside the report)."""
    html = PARSER.render(text)
    assert all(re.fullmatch(r"[\w.-]+\.png", src) for src in re.findall(r'<img src="([^"]*)"', html))
    assert "onerror" not in re.sub(r"&lt;img src=x onerror=alert\(1\)&gt;", "", html)
    for element in ("<a ", "<del>", "<em>", "<blockquote>", "<ol>", "<hr", "<pre>"):
        assert element not in html, element
    assert set(re.findall(r"<h\d>(.*?)</h\d>", html)) == headings
    assert escapeHtml(shown) in html  # the stranger's text, whole, spelled out
    return html
