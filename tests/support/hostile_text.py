"""Hostile strings for what sm121 writes where a person reads it: a terminal (display.escape)
and a Markdown document (display_markdown.inert). Each is what a results file, an endpoint's
reply or an engine's log line may carry; used by tests/unit/test_display_markdown.py and
tests/security/test_stranger_markdown.py, test_stranger_logs.py."""

from __future__ import annotations

# What a terminal runs: a window title set (OSC ... BEL), a screen cleared, a line redrawn.
TERMINAL = {
    "osc-title": "\x1b]0;pwn\x07",
    "clear-screen": "a\x1b[H\x1b[2J- fake: `sync`",
    "carriage-return": "ok\rFAKE",
    "bidi": "a\u202etxt.hs\u202c",
    "zero-width": "ben\u200bign",
}
# What Markdown reads as structure: a cell split, a line ended, a heading, raw HTML, a link,
# a code span, emphasis, a list, a quote, an entity, a hard break, math, a strikethrough.
MARKDOWN = {
    "pipe": "a|b",
    "newline-heading": "line\n# heading",
    "html": "<img src=x onerror=alert(1)>",
    "link": "[click](http://attacker.example/x)",
    "image": "![x](http://attacker.example/x.png)",
    "code": "`open code",
    "emphasis": "**bold** _it_ *it*",
    "heading": "# heading",
    "list": "- item",
    "ordered": "1. item",
    "quote": "> quote",
    "setext": "===",
    "fence": "```",
    "entity": "&lt;img&gt; &#x1b;",
    "backslash": "trailing\\",
    "math": "$x^2$",
    "bad-math": "$\\foo{$",  # matplotlib reads a label with `$` as mathtext
    "strike": "~~gone~~",
    "crlf-table": "a\r\n| x | y |",
}
HOSTILE = {**TERMINAL, **MARKDOWN}
# Names sm121 and the field use, which must come out as they are.
NORMAL = ("Qwen/Qwen3-8B", "meta-llama/Llama-3.1-8B-Instruct", "coding-agent-with-batch",
          "ttft_p95=2s", "0.21.0", "agent-admission", "lpt-512", "max_tokens")
