"""The one error type: a message for the user and a hint on how to fix it."""

from __future__ import annotations

import re


class Sm121Error(Exception):
    """An error the user can act on. The CLI prints message and hint, no traceback."""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message}\n  hint: {self.hint}" if self.hint else self.message


# A word longer than this in a message is shortened when printed: values from recipes, cluster
# files and endpoints reach messages, and a 10,000-character value would bury the error.
LONGEST_WORD = 200


def shorten_words(text: str, limit: int = LONGEST_WORD) -> str:
    """`text` with every run of non-space characters over `limit` cut to its first 60 and a
    count of the rest, so a message names a long value without printing it whole."""
    return re.sub(r"\S{" + str(limit + 1) + ",}",
                  lambda m: f"{m.group()[:60]}…({len(m.group())} characters)", text)
