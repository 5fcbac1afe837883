"""PNG plots of agent runs: a timeline (one row per session, turns as bars), the TTFT CDF,
prefix reuse per turn, and the knee of a sweep over N."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from sm121.bench.report.plots import legend, plt, save_figure
from sm121.bench.scenarios.agents.models import RunMetrics, TurnSample
from sm121.bench.scenarios.agents.summary import by_turn

# label -> one run's turns and background job (or every repetition's), in recorded order
Groups = dict[str, list[TurnSample]]


def timeline(groups: Groups, path: Path) -> Path:
    """Per run: each session a row, each turn a bar (light: waiting for the first token,
    dark: decoding); the background job a red row."""
    fig, axes = plt.subplots(len(groups), 1, figsize=(12, 1.2 + 1.4 * max(1, len(groups)) +
                                                       0.25 * _rows(groups)), squeeze=False,
                             sharex=True)
    for ax, (label, samples) in zip(axes[:, 0], groups.items(), strict=True):
        bars = samples
        names = sorted({_row(s) for s in bars}, key=lambda n: (n[0], n[1]))
        rows = {"background" if a == 1_000_000 else f"agent {a}" + (f" c{c}" if c else ""): i
                for i, (a, c) in enumerate(names)}
        for sample in bars:
            agent, conversation = _row(sample)
            y = names.index((agent, conversation))
            start, first = sample.submitted, sample.first_token or sample.submitted
            end = sample.finished or first
            color = "C3" if sample.kind == "background" else "C0"
            ax.barh(y, first - start, left=start, color=color, alpha=0.35, height=0.7)
            ax.barh(y, end - first, left=first, color=color, alpha=0.9, height=0.7)
        ax.set_yticks(list(rows.values()), list(rows))
        ax.invert_yaxis()
        ax.set_title(f"{label}: light = waiting for the first token, dark = decoding; red = "
                     "background job", fontsize=9)
    axes[-1, 0].set_xlabel("seconds since the sessions started")
    return save_figure(fig, path)


def _row(sample: TurnSample) -> tuple[int, int]:
    """(agent, conversation); the background job sorts last."""
    if sample.kind == "background":
        return 1_000_000, 0
    return sample.agent, sample.conversation


def _rows(groups: Groups) -> int:
    return sum(len({(s.agent, s.conversation) for s in samples})
               for samples in groups.values())


def ttft_cdf(groups: Groups, path: Path) -> Path:
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for index, (label, samples) in enumerate(groups.items()):
        values = np.sort([t.ttft_s for t in _turns(samples) if t.ttft_s])
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
        rows = [(r.turn, r.reuse_mean) for r in by_turn(_turns(samples))
                if r.reuse_mean is not None]
        if rows:
            ax.plot([turn + 1 for turn, _ in rows], [100 * reuse for _, reuse in rows],
                    marker="o", color=f"C{index}", label=label)
    ax.set_ylim(0, 105)
    ax.set_xlabel("turn")
    ax.set_ylabel("prefix reuse: cached / prompt tokens (%, mean over agents)")
    ax.set_title("Prefix reuse per turn (usage.prompt_tokens_details.cached_tokens)",
                 fontsize=9)
    legend(ax)
    return save_figure(fig, path)


def _turns(samples: list[TurnSample]) -> list[TurnSample]:
    return [s for s in samples if s.kind == "turn"]


def knee(points: list[tuple[int, RunMetrics]], path: Path) -> Path:
    """Goodput and TTFT p95 against N (one run's metrics per N); the largest N meeting the
    SLO marked."""
    fig, left = plt.subplots(figsize=(8, 4.5))
    ns = [n for n, _ in points]
    left.plot(ns, [100 * (p.goodput or 0) for _, p in points], marker="o", color="C0",
              label="goodput (%)")
    left.set_xlabel("concurrent agent sessions N")
    left.set_ylabel("goodput: turns meeting the SLO (%)")
    left.set_ylim(0, 105)
    right = left.twinx()
    right.plot(ns, [p.ttft_p95_s or 0 for _, p in points], marker="s", color="C1",
               label="TTFT p95 (s)")
    right.set_ylabel("agent TTFT p95 (s)")
    met = [n for n, p in points if p.slo_met]
    if met:
        left.axvline(max(met), color="C2", ls="--", lw=1)
        left.annotate(f"largest N meeting the SLO: {max(met)}", (max(met), 5), fontsize=8)
    left.set_title("Agent sessions vs SLO (the knee)", fontsize=9)
    legend(left)
    legend(right)
    return save_figure(fig, path)
