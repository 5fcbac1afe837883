"""Time series recorded as JSONL (`sm121 top --record`, `sm121 bench soak`): read them back,
pick the series worth plotting, and draw them stacked on one time axis.

A line is one JSON object with a "kind": "top" (one top sample), "soak" (one soak report
interval), "event" (something that happened at a time: an engine restart). Unknown kinds and
a torn last line (an interrupted writer) are skipped, never fatal."""

from __future__ import annotations

import json
import math
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from pydantic import Field, ValidationError

from sm121.bench.result_models import Number, Open
from sm121.display_markdown import inert
from sm121.errors import Sm121Error

Series = dict[str, list[tuple[float, float]]]  # label -> (seconds since start, value)


class EngineReading(Open):
    """One engine's numbers in a `sm121 top` sample (None: it did not answer)."""

    generation_tok_s: Number | None = None
    prompt_tok_s: Number | None = None
    running: Number | None = None
    waiting: Number | None = None
    kv_usage_pct: Number | None = None


class TopTarget(Open):
    name: str
    engine: EngineReading | None = None


class HostReading(Open):
    node: str
    mem_available_gib: Number | None = None
    mem_free_gib: Number | None = None


class Line(Open):
    """One line of a timeline: a top sample, a soak interval or an event (fields by kind)."""

    kind: str | None = None
    time: str | None = None  # top: ISO time of the sample
    elapsed_s: Number | None = None  # soak and events: seconds since the soak began
    what: str | None = None  # an event's name
    targets: list[TopTarget] = Field(default_factory=list)
    hosts: list[HostReading] = Field(default_factory=list)
    interval_s: Number | None = None
    goodput_tok_s: Number | None = None
    requests_ok: int | None = None
    errors: int | None = None
    engine_up: bool | None = None
    engine_rss_gib: Number | None = None
    engine_restarts: int | None = None
    kv_usage_pct: Number | None = None
    mem_available_gib: Number | None = None
    mem_free_gib: Number | None = None


def load_jsonl(path: Path) -> list[dict[str, Any]]:
    try:
        lines = path.read_text().splitlines()
    except OSError as exc:
        raise Sm121Error(f"cannot read {path}: {exc}", "pass a JSONL file from "
                         "`sm121 top --record` or `sm121 bench soak`") from exc
    records = []
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue  # the torn last line of an interrupted writer
        if isinstance(record, dict):
            records.append(record)
    return records


def read_timeline(path: Path) -> list[Line]:
    """The lines of a timeline, typed; a line of an unexpected shape is skipped, as a torn
    one is."""
    lines = []
    for record in load_jsonl(path):
        try:
            lines.append(Line.model_validate(record))
        except ValidationError:
            continue
    return lines


def _seconds(records: list[Line]) -> list[float]:
    times = [datetime.fromisoformat(r.time or "").timestamp() for r in records]
    start = times[0] if times else 0.0
    return [t - start for t in times]


def _add(series: Series, label: str, t: float, value: Any) -> None:
    """None (the engine did not answer) becomes a gap in the line, not a bridge over it."""
    if isinstance(value, int | float):
        series.setdefault(label, []).append((t, float(value)))
    elif value is None and label in series:
        series[label].append((t, math.nan))


def top_panels(records: list[Line]) -> dict[str, Series]:
    """Throughput, queue, KV and host memory from `sm121 top` samples."""
    samples = [r for r in records if r.kind == "top" and r.time]
    panels: dict[str, Series] = {"tokens/s": {}, "requests": {}, "KV usage %": {},
                                 "host memory GiB": {}}
    for t, sample in zip(_seconds(samples), samples, strict=True):
        for target in sample.targets:
            engine, name = target.engine or EngineReading(), target.name
            _add(panels["tokens/s"], f"{name} generation", t, engine.generation_tok_s)
            _add(panels["tokens/s"], f"{name} prompt", t, engine.prompt_tok_s)
            _add(panels["requests"], f"{name} running", t, engine.running)
            _add(panels["requests"], f"{name} waiting", t, engine.waiting)
            _add(panels["KV usage %"], name, t, engine.kv_usage_pct)
        for host in sample.hosts:
            _add(panels["host memory GiB"], f"{host.node} MemAvailable", t,
                 host.mem_available_gib)
            _add(panels["host memory GiB"], f"{host.node} MemFree", t, host.mem_free_gib)
    return {k: v for k, v in panels.items() if v}


def soak_panels(records: list[Line]) -> dict[str, Series]:
    """Goodput, errors, engine memory and host memory from `sm121 bench soak` intervals."""
    rows = [r for r in records if r.kind == "soak"]
    panels: dict[str, Series] = {"goodput tokens/s": {}, "requests per interval": {},
                                 "engine": {}, "host memory GiB": {}}
    for row in rows:
        t = float(row.elapsed_s or 0.0)
        _add(panels["goodput tokens/s"], "goodput", t, row.goodput_tok_s)
        _add(panels["requests per interval"], "ok", t, row.requests_ok)
        _add(panels["requests per interval"], "errors", t, row.errors)
        _add(panels["engine"], "RSS GiB", t, row.engine_rss_gib)
        _add(panels["engine"], "KV usage %", t, row.kv_usage_pct)
        _add(panels["host memory GiB"], "MemAvailable", t, row.mem_available_gib)
        _add(panels["host memory GiB"], "MemFree", t, row.mem_free_gib)
    return {k: v for k, v in panels.items() if v}


def events(records: list[Line]) -> list[tuple[float, str]]:
    """(seconds since start, label) of events that carry elapsed_s (soak restarts), and the
    first soak interval whose engine did not answer /metrics ("engine down")."""
    marks = [(float(r.elapsed_s), "event" if r.what is None else r.what) for r in records
             if r.kind == "event" and r.elapsed_s is not None
             and r.what not in ("started", "resumed")]
    up = True
    for row in (r for r in records if r.kind == "soak"):
        if up and row.engine_up is False:
            marks.append((float(row.elapsed_s or 0.0), "engine down"))
        up = row.engine_up is not False
    return sorted(marks)


def plot_timeline(panels: dict[str, Series], marks: list[tuple[float, str]], path: Path,
                  title: str) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams["text.parse_math"] = False  # events are a file's: text (report/plots)
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(panels), 1, figsize=(11, 2.6 * len(panels)), sharex=True,
                             squeeze=False)
    for axis, (name, series) in zip(axes[:, 0], panels.items(), strict=True):
        for label, points in series.items():
            axis.plot([p[0] for p in points], [p[1] for p in points], label=label, lw=1.1)
        for when, what in marks:
            axis.axvline(when, color="red", ls="--", lw=0.9)
            axis.annotate(what, (when, 1.0), xycoords=("data", "axes fraction"),
                          fontsize=7, color="red", va="top", rotation=90)
        axis.set_ylabel(name, fontsize=8)
        axis.legend(fontsize=7, loc="upper right")
        axis.grid(alpha=0.3)
    axes[-1, 0].set_xlabel("seconds since the first sample")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def soak_summary(records: list[Line]) -> list[str]:
    """The soak in a few numbers, from its interval lines (Markdown bullets)."""
    rows = [r for r in records if r.kind == "soak"]
    if not rows:
        return []
    seconds = sum(r.interval_s or 0 for r in rows)
    good = [r.goodput_tok_s for r in rows if r.goodput_tok_s is not None]
    down = [r for r in rows if not r.requests_ok]
    rss = [r.engine_rss_gib for r in rows if r.engine_rss_gib]
    avail = [r.mem_available_gib for r in rows if r.mem_available_gib is not None]
    lines = [f"- {seconds:.0f} s in {len(rows)} intervals; "
             f"{sum(r.requests_ok or 0 for r in rows)} turns ok, "
             f"{sum(r.errors or 0 for r in rows)} errors; engine restarts "
             f"{rows[-1].engine_restarts or 0}",
             f"- goodput: mean {sum(good) / len(good):.1f} tok/s over the intervals, "
             f"min {min(good):.1f}, max {max(good):.1f}",
             f"- intervals without one good turn: {len(down)} ({sum(r.interval_s or 0 for r in down):.0f} s)"]
    if rss:
        lines.append(f"- engine RSS (process group): {min(rss):.2f}-{max(rss):.2f} GiB")
    if avail:
        lines.append(f"- host MemAvailable: {min(avail):.2f}-{max(avail):.2f} GiB")
    return lines


def timeline_section(path: Path, out: Path) -> list[str]:
    """The Markdown section of `sm121 bench report` for one JSONL file."""
    records = read_timeline(path)
    stem = path.name.removesuffix(".jsonl")
    kind = "soak" if any(r.kind == "soak" for r in records) else "top"
    panels = soak_panels(records) if kind == "soak" else top_panels(records)
    lines = [f"## {kind} timeline — {inert(path.name, code=True)}", "",
             f"{sum(1 for r in records if r.kind == kind)} samples."]
    marks = events(records)
    lines += ["", *soak_summary(records)]
    lines += [f"- {inert(what)} at {when:.0f} s" for when, what in marks] + [""]
    if panels:
        image = plot_timeline(panels, marks, out / f"{stem}-timeline.png", f"{kind}: {stem}")
        lines += [f"![{inert(image.stem)}]({quote(image.name)})", ""]
    return lines
