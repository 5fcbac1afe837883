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

from sm121.errors import Sm121Error

Series = dict[str, list[tuple[float, float]]]  # label -> (seconds since start, value)


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


def is_timeline(records: list[dict[str, Any]]) -> bool:
    return any(r.get("kind") in ("top", "soak") for r in records)


def _seconds(records: list[dict[str, Any]]) -> list[float]:
    times = [datetime.fromisoformat(r["time"]).timestamp() for r in records]
    start = times[0] if times else 0.0
    return [t - start for t in times]


def _add(series: Series, label: str, t: float, value: Any) -> None:
    """None (the engine did not answer) becomes a gap in the line, not a bridge over it."""
    if isinstance(value, int | float):
        series.setdefault(label, []).append((t, float(value)))
    elif value is None and label in series:
        series[label].append((t, math.nan))


def top_panels(records: list[dict[str, Any]]) -> dict[str, Series]:
    """Throughput, queue, KV and host memory from `sm121 top` samples."""
    samples = [r for r in records if r.get("kind") == "top" and r.get("time")]
    panels: dict[str, Series] = {"tokens/s": {}, "requests": {}, "KV usage %": {},
                                 "host memory GiB": {}}
    for t, sample in zip(_seconds(samples), samples, strict=True):
        for target in sample.get("targets", []):
            engine, name = target.get("engine") or {}, target["name"]
            _add(panels["tokens/s"], f"{name} generation", t, engine.get("generation_tok_s"))
            _add(panels["tokens/s"], f"{name} prompt", t, engine.get("prompt_tok_s"))
            _add(panels["requests"], f"{name} running", t, engine.get("running"))
            _add(panels["requests"], f"{name} waiting", t, engine.get("waiting"))
            _add(panels["KV usage %"], name, t, engine.get("kv_usage_pct"))
        for host in sample.get("hosts", []):
            _add(panels["host memory GiB"], f"{host['node']} MemAvailable", t,
                 host.get("mem_available_gib"))
            _add(panels["host memory GiB"], f"{host['node']} MemFree", t,
                 host.get("mem_free_gib"))
    return {k: v for k, v in panels.items() if v}


def soak_panels(records: list[dict[str, Any]]) -> dict[str, Series]:
    """Goodput, errors, engine memory and host memory from `sm121 bench soak` intervals."""
    rows = [r for r in records if r.get("kind") == "soak"]
    panels: dict[str, Series] = {"goodput tokens/s": {}, "requests per interval": {},
                                 "engine": {}, "host memory GiB": {}}
    for row in rows:
        t = row["elapsed_s"]
        _add(panels["goodput tokens/s"], "goodput", t, row.get("goodput_tok_s"))
        _add(panels["requests per interval"], "ok", t, row.get("requests_ok"))
        _add(panels["requests per interval"], "errors", t, row.get("errors"))
        _add(panels["engine"], "RSS GiB", t, row.get("engine_rss_gib"))
        _add(panels["engine"], "KV usage %", t, row.get("kv_usage_pct"))
        _add(panels["host memory GiB"], "MemAvailable", t, row.get("mem_available_gib"))
        _add(panels["host memory GiB"], "MemFree", t, row.get("mem_free_gib"))
    return {k: v for k, v in panels.items() if v}


def events(records: list[dict[str, Any]]) -> list[tuple[float, str]]:
    """(seconds since start, label) of events that carry elapsed_s (soak restarts), and the
    first soak interval whose engine did not answer /metrics ("engine down")."""
    marks = [(r["elapsed_s"], str(r.get("what", "event"))) for r in records
             if r.get("kind") == "event" and isinstance(r.get("elapsed_s"), int | float)
             and r.get("what") not in ("started", "resumed")]
    up = True
    for row in (r for r in records if r.get("kind") == "soak"):
        if up and row.get("engine_up") is False:
            marks.append((row["elapsed_s"], "engine down"))
        up = row.get("engine_up") is not False
    return sorted(marks)


def plot_timeline(panels: dict[str, Series], marks: list[tuple[float, str]], path: Path,
                  title: str) -> Path:
    import matplotlib

    matplotlib.use("Agg")
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


def soak_summary(records: list[dict[str, Any]]) -> list[str]:
    """The soak in a few numbers, from its interval lines (Markdown bullets)."""
    rows = [r for r in records if r.get("kind") == "soak"]
    if not rows:
        return []
    seconds = sum(r.get("interval_s") or 0 for r in rows)
    good = [r["goodput_tok_s"] for r in rows if r.get("goodput_tok_s") is not None]
    down = [r for r in rows if not r.get("requests_ok")]
    rss = [r["engine_rss_gib"] for r in rows if r.get("engine_rss_gib")]
    avail = [r["mem_available_gib"] for r in rows if r.get("mem_available_gib") is not None]
    lines = [f"- {seconds:.0f} s in {len(rows)} intervals; {sum(r['requests_ok'] for r in rows)} "
             f"turns ok, {sum(r['errors'] for r in rows)} errors; engine restarts "
             f"{rows[-1].get('engine_restarts', 0)}",
             f"- goodput: mean {sum(good) / len(good):.1f} tok/s over the intervals, "
             f"min {min(good):.1f}, max {max(good):.1f}",
             f"- intervals without one good turn: {len(down)} ({sum(r['interval_s'] for r in down):.0f} s)"]
    if rss:
        lines.append(f"- engine RSS (process group): {min(rss):.2f}-{max(rss):.2f} GiB")
    if avail:
        lines.append(f"- host MemAvailable: {min(avail):.2f}-{max(avail):.2f} GiB")
    return lines


def timeline_section(path: Path, out: Path) -> list[str]:
    """The Markdown section of `sm121 bench report` for one JSONL file."""
    records = load_jsonl(path)
    stem = path.name.removesuffix(".jsonl")
    kind = "soak" if any(r.get("kind") == "soak" for r in records) else "top"
    panels = soak_panels(records) if kind == "soak" else top_panels(records)
    lines = [f"## {kind} timeline — `{path.name}`", "",
             f"{sum(1 for r in records if r.get('kind') == kind)} samples."]
    marks = events(records)
    lines += ["", *soak_summary(records)]
    lines += [f"- {what} at {when:.0f} s" for when, what in marks] + [""]
    if panels:
        image = plot_timeline(panels, marks, out / f"{stem}-timeline.png", f"{kind}: {stem}")
        lines += [f"![{image.stem}]({image.name})", ""]
    return lines
