"""One Markdown table of `sm121 bench agents` results, one row per protocol (--api): goodput,
TTFT, the usage cross-check and prompt exactness, reuse. Stdlib and sm121 only (on the GPU
host, the sitting's PYTHONPATH holds sm121 beside vLLM: scripts/gpu/env.sh). A results file's
strings are a stranger's: each enters the table through `display_markdown.inert`.

    python3 scripts/gpu/protocols_table.py agents-chat.json agents-messages.json ...
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path
from typing import Any

from sm121.display_markdown import inert


def load(path: Path) -> dict[str, Any]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as handle:  # type: ignore[operator]
        return json.load(handle)  # type: ignore[no-any-return]


def row(data: dict[str, Any]) -> str:
    s = data.get("summary") or {}
    slo = s.get("slo") or {}
    ttft, judged = s.get("ttft") or {}, s.get("ttft_judged") or {}
    reuse = (s.get("reuse_after_first") or {}).get("mean")
    turns = inert(s.get("turns", "?"))
    cells = [inert(data.get("api", "?")), inert(s.get("agents", "?")), turns,
             f"{inert(s.get('usage_checked', '?'))}/{turns}",
             f"{inert(s.get('prompt_exact', '?'))}/{turns}",
             _pct(slo.get("goodput")), _s(ttft.get("p50")), _s(ttft.get("p95")),
             _s(judged.get("p95")), _pct(reuse), _num(s.get("decode_p50")),
             _events(s), inert(data.get("status", "?"))]
    return "| " + " | ".join(cells) + " |"


def _events(s: dict[str, Any]) -> str:
    """Turns whose content events were one per token (Messages, Responses; chat counts ids)."""
    value = s.get("events_match_usage")
    return "-" if value is None else f"{inert(value)}/{inert(s.get('turns', '?'))}"


def _pct(value: Any) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _s(value: Any) -> str:
    return "-" if value is None else f"{value:.3f} s"


def _num(value: Any) -> str:
    return "-" if value is None else f"{value:.1f}"


def main(paths: list[str]) -> int:
    if not paths:
        print(__doc__)
        return 2
    runs = [load(Path(p)) for p in paths]
    slo = next(((r.get("summary") or {}).get("slo") or {}).get("slo", "?") for r in runs)
    print(f"SLO {inert(slo)}; goodput counted from the turn the SLO judges (judged p95).\n")
    print("| api | agents | turns | usage checked | prompt exact | goodput | TTFT p50 | "
          "TTFT p95 | judged p95 | reuse after turn 1 | decode tok/s p50 | "
          "one event per token | status |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for data in runs:
        print(row(data))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
