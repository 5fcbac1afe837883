"""`display_markdown.inert`: a stranger's string in Markdown shows as itself (its hidden
characters spelled out, as on a terminal) and does nothing else. Read by a CommonMark parser
with GFM tables (markdown-it-py, which rich brings), in the places a report puts a value:
mid-sentence, where a line starts, in a table cell, in a code span."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml
from support.hostile_text import HOSTILE, NORMAL

from sm121.display import escape
from sm121.display_markdown import document, inert

# CommonMark (raw HTML on, as GitHub's renderer reads it before its sanitiser) with tables
PARSER = MarkdownIt("commonmark").enable(["table", "strikethrough"])
# Markdown's own characters, the blanks and line ends around them, and anything else
MARKUP = st.text(st.sampled_from(list("\\`*_[]()<>&|~$#+-=.!:1 \t\n\r\x1bab"))
                 | st.characters(), max_size=40)


def _html(markdown: str) -> str:
    return PARSER.render(markdown)


def _shown(value: str) -> str:
    """What the reader must see: the value, its hidden characters spelled out."""
    return escapeHtml(escape(value, None))


@pytest.mark.parametrize("value", NORMAL)
def test_a_normal_name_is_written_as_it_is(value: str) -> None:
    assert inert(value) == value
    assert inert(value, code=True) == f"`{value}`"


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_a_hostile_string_is_text_wherever_it_stands(kind: str) -> None:
    value = HOSTILE[kind]
    written = inert(value)
    assert "\n" not in written and "\x1b" not in written and "<" not in written
    _check_mid_sentence(value)
    _check_line_start(value)
    _check_table_cell(value)
    _check_code_span(value)


@settings(deadline=None, max_examples=400, database=None)
@given(MARKUP)
def test_any_string_is_text_wherever_it_stands(value: str) -> None:
    _check_mid_sentence(value)
    _check_table_cell(value)
    _check_code_span(value)
    if value and not value[0].isspace():  # leading blanks at a line start: an indented line
        _check_line_start(value)


def _check_mid_sentence(value: str) -> None:
    assert _html(f"a {inert(value)} z") == f"<p>a {_shown(value)} z</p>\n"


def _check_line_start(value: str) -> None:
    assert _html(f"{inert(value)} z") == f"<p>{_shown(value)} z</p>\n"
    assert _html(f"- {inert(value)} z") == f"<ul>\n<li>{_shown(value)} z</li>\n</ul>\n"


def _check_table_cell(value: str) -> None:
    html = _html(f"| h | i |\n|---|---|\n| {inert(value)} | z |")
    cells = re.findall(r"<td>(.*?)</td>", html, re.S)
    assert cells == [_shown(value).strip(), "z"], html  # a cell is trimmed


def _check_code_span(value: str) -> None:
    if not value:  # nothing to show: a span of one space
        assert inert(value, code=True) == "` `"
        return
    spelled = escape(value, None)
    outside = escapeHtml(spelled.replace("|", "\\|"))  # outside a table its backslash shows
    assert _html(f"a {inert(value, code=True)} z") == f"<p>a <code>{outside}</code> z</p>\n"
    html = _html(f"| h |\n|---|\n| {inert(value, code=True)} |")
    assert re.findall(r"<td>(.*?)</td>", html, re.S) == [f"<code>{escapeHtml(spelled)}</code>"]


def test_a_long_string_is_cut_and_says_so() -> None:
    assert inert("x" * 2010) == "x" * 2000 + "…(10 more characters)"
    assert inert("|" * 5, 2) == "\\|\\|…(3 more characters)"
    assert inert("`" * 5, 2, code=True) == "``` `` ```…(3 more characters)"


def test_where_a_value_starts_it_opens_no_block() -> None:
    assert [inert(v) for v in ("# x", "- x", "+ x", "= x", "1. x", "2) x", "  # x")] == \
        ["\\# x", "\\- x", "\\+ x", "\\= x", "1\\. x", "2\\) x", "  \\# x"]
    assert [inert(v) for v in ("a # b", "a - b", "3.14", "0.21.0", "a_b", "_a", "a_")] == \
        ["a # b", "a - b", "3.14", "0.21.0", "a_b", "\\_a", "a\\_"]


def test_the_document_net_spells_control_characters_but_its_lines() -> None:
    assert document("# t\n\n| a\tb |\x1b]0;x\x07\r\n") == "# t\n\n| a\tb |\\x1b]0;x\\x07\\r\n"
