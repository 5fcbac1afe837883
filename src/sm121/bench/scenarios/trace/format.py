"""A trace file, typed: Mooncake's JSON Lines (kvcache-ai/Mooncake, FAST25-release/traces,
Apache-2.0). One object a line: `timestamp` (ms since the trace began), `input_length` and
`output_length` (tokens) and `hash_ids`, one id per 512-token block of the prompt, the same id
wherever two prompts share that block and everything before it.

The file is stranger data: every line is validated into `TraceRequest` and an error names the
line (`Sm121Error`), before anything is sent."""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from sm121.errors import Sm121Error

FORMATS = ("mooncake",)
Format = Literal["mooncake"]
TRACE_BLOCK = 512  # tokens per hash_ids block in Mooncake's traces
MAX_LINE = 1 << 20  # one request's line; a longer one is not a trace line
MAX_BLOCKS = 8192  # 4M tokens at 512 a block: far past any served window


class TraceRequest(BaseModel):
    """One request of the trace as its line says it."""

    model_config = ConfigDict(extra="ignore", frozen=True, strict=True)

    timestamp: int = Field(ge=0)  # ms since the trace began
    input_length: int = Field(ge=1)
    output_length: int = Field(ge=1)
    hash_ids: tuple[int, ...] = Field(min_length=1, max_length=MAX_BLOCKS)

    @model_validator(mode="after")
    def _blocks_cover_input(self) -> TraceRequest:
        """One id per 512-token block: the ids are exactly the blocks the input fills."""
        if len(self.hash_ids) != math.ceil(self.input_length / TRACE_BLOCK):
            raise ValueError(f"{len(self.hash_ids)} hash_ids for {self.input_length} input "
                             f"tokens; one per {TRACE_BLOCK}-token block means "
                             f"{math.ceil(self.input_length / TRACE_BLOCK)}")
        if any(h < 0 for h in self.hash_ids):
            raise ValueError("hash_ids are non-negative integers")
        return self


def parse_lines(lines: Iterable[str], source: str, limit: int | None = None
                ) -> list[TraceRequest]:
    """The trace's requests in order (the first `limit`); blank lines are skipped. An error
    names `source`, the line and what is wrong with it; timestamps must not go back."""
    requests: list[TraceRequest] = []
    for number, line in enumerate(lines, start=1):
        if limit is not None and len(requests) >= limit:
            break
        if not line.strip():
            continue
        if len(line) > MAX_LINE:
            raise Sm121Error(f"{source}:{number}: line of {len(line):,} characters",
                             f"a trace line is one request, under {MAX_LINE:,} characters")
        try:
            request = TraceRequest.model_validate_json(line)
        except ValidationError as exc:
            raise Sm121Error(f"{source}:{number}: not a Mooncake trace request: "
                             f"{_first_error(exc)}",
                             "each line is one JSON object: timestamp (ms), input_length, "
                             "output_length, hash_ids (one per 512-token block)") from exc
        if requests and request.timestamp < requests[-1].timestamp:
            raise Sm121Error(f"{source}:{number}: timestamp {request.timestamp} is before the "
                             f"previous line's {requests[-1].timestamp}",
                             "a trace lists requests in arrival order")
        requests.append(request)
    if not requests:
        raise Sm121Error(f"{source}: no requests", "a Mooncake trace has one JSON object a line")
    return requests


def load_trace(path: Path, fmt: str = "mooncake", limit: int | None = None
               ) -> list[TraceRequest]:
    """The requests of a trace file (see `parse_lines`)."""
    if fmt not in FORMATS:
        raise Sm121Error(f"unknown trace format {fmt!r}", f"one of: {', '.join(FORMATS)}")
    try:  # line by line: --limit reads only what it replays
        with path.open(encoding="utf-8") as lines:
            return parse_lines(lines, path.name, limit)
    except (OSError, UnicodeDecodeError) as exc:
        raise Sm121Error(f"cannot read the trace {path}: {exc}",
                         "pass a Mooncake-format JSON Lines file") from exc


def _first_error(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(p) for p in error["loc"])
    return f"{where}: {error['msg']}" if where else str(error["msg"])
