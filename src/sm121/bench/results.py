"""The results file: a versioned JSON schema, written atomically after every sample so that
Ctrl-C (or a crash) loses nothing already measured."""

from __future__ import annotations

import asyncio
import gzip
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from sm121 import __version__
from sm121.bench.result_models import SCHEMA, SCHEMA_VERSION, AbResults, Envelope, Open
from sm121.display import escape, quoted
from sm121.errors import Sm121Error
from sm121.runs.state import write_json_atomic

# The largest results file committed here is 13 MB of JSON (cpu-testbed ab-overlap); a
# results file is read whole (json), so what a .gz may expand to is capped well above that.
MAX_RESULTS_BYTES = 256 * 1024 * 1024
_CHUNK = 1024 * 1024


def _read_bounded(path: Path, limit: int) -> bytes:
    """The file's bytes, decompressed when it is a .gz (a committed copy may be: raw results
    compress well), streamed in chunks and refused past `limit`: a small .gz can expand to
    any size, and was decompressed whole into memory."""
    opener = gzip.open if path.suffix == ".gz" else open
    out = bytearray()
    with opener(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            out += chunk
            if len(out) > limit:
                raise Sm121Error(f"results {path} are larger than {limit // (1024 * 1024)} MiB"
                                 + (" once decompressed" if path.suffix == ".gz" else ""),
                                 "this is not a results file sm121 wrote (the largest are "
                                 "tens of MB); pass the file `sm121 bench` wrote")
    return bytes(out)


def default_path(scenario: str, folder: Path = Path("bench-results")) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    return folder / f"{scenario}-{stamp}.json"


class ResultsFile:
    """One scenario run (kind "scenario"), one A/B (kind "ab") or a sweep on disk; its
    models are in `result_models`.

    Layout: schema, schema_version, kind, scenario, sm121_version, created, status
    (running | complete | interrupted | failed), params, server, probe, samples (raw, one
    entry per repetition or step), summary, error."""

    data: dict[str, Any]

    def __init__(self, path: Path, kind: str, scenario: str, params: dict[str, Any],
                 resume: bool = False, check: Callable[[Envelope], None] | None = None) -> None:
        """With `resume`, the file as left (read by `load_results`), and `check` (the owner's:
        is it the same question?) on its envelope before anything is written."""
        self.path = path
        if resume and path.is_file():
            self.data = load_results(path)
            if check is not None:
                check(Envelope.model_validate(self.data))
            self.data["status"] = "running"
            self.save()
            return
        self.data = {
            "schema": SCHEMA, "schema_version": SCHEMA_VERSION, "kind": kind,
            "scenario": scenario, "sm121_version": __version__,
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
            "status": "running", "params": params, "server": {}, "probe": None,
            "samples": [], "summary": {}, "error": None,
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        self.save()

    def set(self, **fields: Any) -> None:
        self.data.update(fields)
        self.save()

    def add_sample(self, sample: dict[str, Any]) -> None:
        self.data["samples"].append(sample)
        self.save()

    def finish(self, status: str, error: str | None = None) -> None:
        self.data["status"] = status
        self.data["finished"] = datetime.now(UTC).isoformat(timespec="seconds")
        if error:
            self.data["error"] = error
        self.save()

    def save(self) -> None:
        write_json_atomic(self.path, self.data)

    @contextmanager
    def recording(self) -> Iterator[ResultsFile]:
        """Mark the file complete, interrupted (Ctrl-C) or failed (with the error) at the end."""
        try:
            yield self
        except (KeyboardInterrupt, asyncio.CancelledError):
            self.finish("interrupted")
            raise
        except BaseException as exc:
            self.finish("failed", error=str(exc))
            raise
        self.finish("complete")


def load_results(path: Path, limit: int | None = None) -> dict[str, Any]:
    try:
        data = json.loads(_read_bounded(path, limit or MAX_RESULTS_BYTES))
    except (OSError, ValueError, EOFError) as exc:  # EOFError: a truncated .gz
        raise Sm121Error(f"cannot read results {path}: {exc}",
                         "pass a JSON file written by `sm121 bench`") from exc
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise Sm121Error(f"{path} is not an sm121 bench results file",
                         f"expected \"schema\": \"{SCHEMA}\"")
    if data.get("schema_version", 0) > SCHEMA_VERSION:
        raise Sm121Error(f"{path} has schema version {data['schema_version']}; this sm121 "
                         f"reads up to {SCHEMA_VERSION}", "upgrade sm121")
    try:
        Envelope.model_validate(data)  # the fields every kind has (`typed` types the rest)
        # an A/B's profile strings name the files its resume writes and reach every report
        if data.get("kind") == "ab":
            AbResults[Any, Open].model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]  # a key may be the stranger's name itself: spelled out
        field = quoted(".".join(str(p) for p in error["loc"]), 200)
        raise Sm121Error(f"{path}: field {field}: {escape(error['msg'])}",
                         "pass a results file written by `sm121 bench` (unchanged)") from exc
    return data
