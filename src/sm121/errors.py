"""The one error type: a message for the user and a hint on how to fix it."""

from __future__ import annotations


class Sm121Error(Exception):
    """An error the user can act on. The CLI prints message and hint, no traceback."""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message}\n  hint: {self.hint}" if self.hint else self.message
