"""The `sm121 top` loops: one JSON object per interval (pipes, --json, --once), or the rich
Live view with keys. Both can record every sample as one JSONL line."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from rich.console import Console
from rich.live import Live

from sm121.monitor import keys
from sm121.monitor.sampler import Sampler
from sm121.monitor.view import VIEWS, render

RECORD_KIND = "top"


class Recorder:
    """Appends one line per sample and flushes it, so an interrupted top keeps every line."""

    def __init__(self, path: Path | None, interval_s: float) -> None:
        self.handle: TextIO | None = None
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            self.handle = open(path, "a")  # noqa: SIM115 (closed by close())
            self.write({"kind": "top-start", "interval_s": interval_s})

    def write(self, record: dict[str, Any]) -> None:
        if self.handle is not None:
            self.handle.write(json.dumps(record) + "\n")
            self.handle.flush()

    def close(self) -> None:
        if self.handle is not None:
            self.handle.close()


def run_json(sampler: Sampler, interval_s: float, once: bool, recorder: Recorder,
             emit: Callable[[str], None], samples: int | None = None) -> None:
    sampler.prime()
    count = 0
    while True:
        time.sleep(interval_s)
        sample = {"kind": RECORD_KIND, "interval_s": interval_s} | sampler.sample()
        recorder.write(sample)
        emit(json.dumps(sample))
        count += 1
        if once or (samples is not None and count >= samples):
            return


def run_live(sampler: Sampler, interval_s: float, recorder: Recorder, console: Console) -> None:
    """Refresh every interval; `q` quits, `n` (or Tab) toggles between runs and nodes."""
    view, sample = VIEWS[0], None
    sampler.prime()
    due = time.monotonic() + interval_s
    with keys.cbreak(), Live(render(None, view, interval_s), console=console,
                             auto_refresh=False, screen=False) as live:
        while True:
            key = keys.read_key(due - time.monotonic())
            if key in ("q", "Q"):
                return
            if key in ("n", "N", "\t"):
                view = VIEWS[(VIEWS.index(view) + 1) % len(VIEWS)]
            if time.monotonic() >= due:
                sample = {"kind": RECORD_KIND, "interval_s": interval_s} | sampler.sample()
                recorder.write(sample)
                due = time.monotonic() + interval_s
            live.update(render(sample, view, interval_s), refresh=True)
