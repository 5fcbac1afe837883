"""Durations typed by a user (`--duration 72h`, `--budget 1h30m`, `--report-every 90`): one
grammar for every option that takes one."""

from __future__ import annotations

import re

from sm121.errors import Sm121Error

_UNITS = {"d": 86400.0, "h": 3600.0, "m": 60.0, "s": 1.0}
_PART = r"(\d+(?:\.\d+)?)([dhms])"
_WHOLE = re.compile(rf"(?:{_PART})+")


def parse_duration(text: str, option: str = "duration") -> float:
    """Seconds from '600', '90s', '25m', '72h', '1d' or a sequence such as '1h30m' (units in
    the order d, h, m, s, each at most once). Zero or less is refused."""
    cleaned = text.strip()
    if re.fullmatch(r"\d+(?:\.\d+)?", cleaned):
        seconds = float(cleaned)
    elif _WHOLE.fullmatch(cleaned) and _in_order(units := re.findall(_PART, cleaned)):
        seconds = sum(float(n) * _UNITS[unit] for n, unit in units)
    else:
        seconds = 0.0
    if seconds <= 0:
        raise Sm121Error(f"{option} {text!r} is not a duration",
                         "examples: 600 (seconds), 90s, 25m, 1h30m, 72h, 1d")
    return seconds


def _in_order(parts: list[tuple[str, str]]) -> bool:
    order = [list(_UNITS).index(unit) for _, unit in parts]
    return order == sorted(set(order))
