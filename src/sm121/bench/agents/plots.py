"""PNG plots of agent runs: a timeline (one row per session, turns as bars), the TTFT CDF,
prefix reuse per turn, and the knee of a sweep over N."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from sm121.bench.agents.summary import by_turn, turns_of
from sm121.bench.report.plots import legend, plt, save_figure

Groups = dict[str, list[dict[str, Any]]]  # label -> one run's raw samples


def timeline(groups: Groups, path: Path) -> Path:
    """Per run: each session a row, each turn a bar (light: waiting for the first token,
    dark: decoding); the background job a red row."""
    fig, axes = plt.subplots(len(groups), 1, figsize=(12, 1.2 + 1.4 * max(1, len(groups)) +
                                                       0.25 * _rows(groups)), squeeze=False,
                             sharex=True)
    for ax, (label, samples) in zip(axes[:, 0], groups.items(), strict=True):
        bars = [s for s in samples if s.get("kind") in ("turn", "background")]
        names = sorted({_row(s) for s in bars}, key=lambda n: (n[0], n[1]))
        rows = {"background" if a == 1_000_000 else f"agent {a}" + (f" c{c}" if c else ""): i
                for i, (a, c) in enumerate(names)}
        for sample in bars:
            agent, conversation = _row(sample)
            y = names.index((agent, conversation))
            start, first = sample["submitted"], sample.get("first_token") or sample["submitted"]
            end = sample.get("finished") or first
            color = "C3" if sample["kind"] == "background" else "C0"
            ax.barh(y, first - start, left=start, color=color, alpha=0.35, height=0.7)
            ax.barh(y, end - first, left=first, color=color, alpha=0.9, height=0.7)
        ax.set_yticks(list(rows.values()), list(rows))
        ax.invert_yaxis()
        ax.set_title(f"{label}: light = waiting for the first token, dark = decoding; red = "
                     "background job", fontsize=9)
    axes[-1, 0].set_xlabel("seconds since the sessions started")
    return save_figure(fig, path)


def _row(sample: dict[str, Any]) -> tuple[int, int]:
    """(agent, conversation); the background job sorts last."""
    if sample["kind"] == "background":
        return 1_000_000, 0
    return int(sample["agent"]), int(sample.get("conversation") or 0)


def _rows(groups: Groups) -> int:
    return sum(len({(s.get("agent"), s.get("conversation")) for s in samples
                    if s.get("kind") in ("turn", "background")}) for samples in groups.values())


def ttft_cdf(groups: Groups, path: Path) -> Path:
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for index, (label, samples) in enumerate(groups.items()):
        values = np.sort([t["ttft_s"] for t in turns_of(samples) if t.get("ttft_s")])
        if len(values):
            ax.step(values, np.arange(1, len(values) + 1) / len(values), where="post",
                    color=f"C{index}", label=f"{label} (n={len(values)})")
    ax.set_xscale("log")
    ax.set_xlabel("agent turn TTFT (s, log)")
    ax.set_ylabel("fraction of turns <= x")
    ax.set_title("TTFT of agent turns (background job excluded)", fontsize=9)
    legend(ax)
    return save_figure(fig, path)


def reuse_per_turn(groups: Groups, path: Path) -> Path:
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for index, (label, samples) in enumerate(groups.items()):
        rows = [r for r in by_turn(turns_of(samples)) if r["reuse_mean"] is not None]
        if rows:
            ax.plot([r["turn"] + 1 for r in rows], [100 * r["reuse_mean"] for r in rows],
                    marker="o", color=f"C{index}", label=label)
    ax.set_ylim(0, 105)
    ax.set_xlabel("turn")
    ax.set_ylabel("prefix reuse: cached / prompt tokens (%, mean over agents)")
    ax.set_title("Prefix reuse per turn (usage.prompt_tokens_details.cached_tokens)",
                 fontsize=9)
    legend(ax)
    return save_figure(fig, path)


def knee(points: list[dict[str, Any]], path: Path) -> Path:
    """Goodput and TTFT p95 against N; the largest N meeting the SLO marked."""
    fig, left = plt.subplots(figsize=(8, 4.5))
    ns = [p["agents"] for p in points]
    left.plot(ns, [100 * (p["goodput"] or 0) for p in points], marker="o", color="C0",
              label="goodput (%)")
    left.set_xlabel("concurrent agent sessions N")
    left.set_ylabel("goodput: turns meeting the SLO (%)")
    left.set_ylim(0, 105)
    right = left.twinx()
    right.plot(ns, [p["ttft_p95_s"] or 0 for p in points], marker="s", color="C1",
               label="TTFT p95 (s)")
    right.set_ylabel("agent TTFT p95 (s)")
    met = [p["agents"] for p in points if p["slo_met"]]
    if met:
        left.axvline(max(met), color="C2", ls="--", lw=1)
        left.annotate(f"largest N meeting the SLO: {max(met)}", (max(met), 5), fontsize=8)
    left.set_title("Agent sessions vs SLO (the knee)", fontsize=9)
    legend(left)
    legend(right)
    return save_figure(fig, path)
