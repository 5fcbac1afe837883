"""How tune shows a measured number in its report and in the recipe's comments: "-" where
nothing was measured, so a missing value reads as missing, never as 0."""

from __future__ import annotations


def pct(value: float | None) -> str:
    """A share as a percentage, one decimal."""
    return "-" if value is None else f"{value:.1%}"


def number(value: float | None, fmt: str = ",.0f") -> str:
    """A number in `fmt` (a count with thousands separators unless told)."""
    return "-" if value is None else format(value, fmt)
