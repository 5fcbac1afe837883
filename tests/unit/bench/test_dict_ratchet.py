"""A ratchet on untyped results: `dict[str, Any]` under src/sm121/bench may only go down.
Issue 31's goal is under 60, left only in the HTTP client, the results file's edge and raw
records; when you type a dict away, lower CEILING to the new count in the same commit."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

BENCH = Path(__file__).resolve().parents[3] / "src" / "sm121" / "bench"
PATTERN = re.compile(r"dict\[str, *Any\]")
CEILING = 71


def _counts() -> Counter[str]:
    return Counter({str(path.relative_to(BENCH)): len(PATTERN.findall(path.read_text()))
                    for path in BENCH.rglob("*.py")})


def test_untyped_dicts_in_bench_do_not_grow() -> None:
    counts = _counts()
    total = sum(counts.values())
    worst = ", ".join(f"{name} {n}" for name, n in counts.most_common(8))
    assert total <= CEILING, (f"{total} `dict[str, Any]` under src/sm121/bench, above the "
                              f"ceiling {CEILING}: type the new data (a pydantic model or a "
                              f"frozen dataclass). Most: {worst}")
