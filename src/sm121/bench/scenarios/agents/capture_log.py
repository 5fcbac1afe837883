"""Reading what `sm121 gateway --capture` recorded, for replay: one entry per generation
request that succeeded, keyed by the gateway's session id, in arrival order.

A capture directory holds ID.request (the body, redacted or not), ID.response and
ID.meta.json (path, status, session, arrival / first-byte / finish times, token counts).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sm121.bench.scenarios.agents.models import GapErrors, TurnSample
from sm121.errors import Sm121Error
from sm121.names import NAME_PATTERN

# A wait for the previous answer shorter than this is timer noise, not a held request.
HELD_S = 0.005
REPLAYED_PATHS = ("/v1/chat/completions", "/v1/completions", "/v1/messages", "/v1/responses")
_REDACTED = "[redacted "


@dataclass(frozen=True)
class Captured:
    request_id: str
    session: str
    path: str
    arrived: float  # wall-clock seconds (the gateway's clock)
    finished: float | None
    body: dict[str, Any]
    prompt_tokens: int | None
    completion_tokens: int | None
    redacted: bool


def is_redacted(value: Any) -> bool:
    return isinstance(value, str) and value.startswith(_REDACTED)


def redacted_chars(value: str) -> int:
    """'[redacted 123 chars]' -> 123 (0 when the marker names bytes or ids)."""
    parts = value.split()
    return int(parts[1]) if len(parts) > 2 and parts[1].isdigit() and "chars" in value else 0


def load_capture(directory: Path) -> list[Captured]:
    if not directory.is_dir():
        raise Sm121Error(f"{directory} is not a capture directory",
                         "pass the folder given to `sm121 gateway --capture`")
    entries = [e for e in (_entry(m) for m in sorted(directory.glob("*.meta.json")))
               if e is not None]
    if not entries:
        raise Sm121Error(f"{directory} holds no replayable requests",
                         "a capture needs successful chat, completions, Messages or Responses "
                         "requests with "
                         "session ids (captured by this sm121's gateway)")
    return sorted(entries, key=lambda e: e.arrived)


def _entry(meta_path: Path) -> Captured | None:
    try:
        meta = json.loads(meta_path.read_text())
    except (OSError, ValueError):
        return None
    path = str(meta.get("path", "")).split("?")[0]
    if path not in REPLAYED_PATHS or meta.get("status") != 200 or "session" not in meta:
        return None
    request_id = _checked_id(meta.get("id"), meta_path)
    try:
        body = json.loads((meta_path.parent / f"{request_id}.request").read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(body, dict):
        return None
    return Captured(request_id, str(meta["session"]), path,
                    float(meta.get("arrived", meta["time"])), meta.get("finished"), body,
                    meta.get("prompt_tokens"), meta.get("completion_tokens"),
                    bool(meta.get("redacted")))


def _checked_id(value: object, meta_path: Path) -> str:
    """A capture's id names its files (ID.request beside ID.meta.json): a plain name, the one
    its meta file is named by, so a planted `../elsewhere/private` cannot make replay read
    (and send) a file outside the capture folder."""
    expected = meta_path.name.removesuffix(".meta.json")
    if not isinstance(value, str) or value != expected or not NAME_PATTERN.fullmatch(value):
        raise Sm121Error(f"{meta_path}: its id {str(value)[:80]!r} is not {expected!r}, the "
                         "name its file has (ids are plain names: letters, digits, _ . -)",
                         "a capture folder holds only what `sm121 gateway --capture` wrote; "
                         "remove the files that were put there")
    return value


def by_session(entries: list[Captured]) -> dict[str, list[Captured]]:
    sessions: dict[str, list[Captured]] = {}
    for entry in entries:
        sessions.setdefault(entry.session, []).append(entry)
    return sessions


def schedule(entries: list[Captured], speed: float) -> list[tuple[float, Captured]]:
    """(offset from the replay's start, request): the original arrival offsets over speed."""
    if speed <= 0:
        raise Sm121Error(f"--speed must be positive, not {speed}", "example: --speed 2")
    start = min(e.arrived for e in entries)
    return [((e.arrived - start) / speed, e) for e in entries]


def gap_errors(rows: list[TurnSample]) -> GapErrors:
    """Per session, each inter-arrival gap replayed against the original one over speed:
    the relative error (|replayed - wanted| / wanted), its max and median."""
    gapped = [(r.replay_gap_s, r.wanted_gap_s, r.held_s or 0.0) for r in rows
              if r.wanted_gap_s and r.replay_gap_s is not None]
    errors = sorted(abs(replayed - wanted) / wanted for replayed, wanted, _ in gapped)
    return GapErrors(gaps=len(errors), max_rel_error=errors[-1] if errors else None,
                     median_rel_error=errors[len(errors) // 2] if errors else None,
                     within_10pct=sum(e <= 0.10 for e in errors),
                     held=sum(1 for _, _, held in gapped if held > HELD_S))
