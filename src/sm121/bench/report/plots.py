"""PNG plots for the report (matplotlib, Agg) and what every plot shares (legend, saving).
A plot takes samples grouped by label (a profile of an A/B, or one run) and writes one file;
a scenario's own plots live in its package (overlap's in `scenarios/overlap/plots.py`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
# Labels are profile names, labels and events from results files: text, never mathtext (a
# name with `$\foo{$` in it stopped the whole report with matplotlib's parse error)
matplotlib.rcParams["text.parse_math"] = False
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

Groups = dict[str, list[dict[str, Any]]]  # label -> samples (raw, as a results file holds them)


def scaling(curves: dict[str, dict[str, list[tuple[int, float]]]], path: Path) -> Path:
    """curves: kind ("decode" | "prefill") -> label -> [(N, aggregate tok/s)]."""
    kinds = [k for k in ("decode", "prefill") if curves.get(k)]
    fig, axes = plt.subplots(1, max(1, len(kinds)), figsize=(5 * max(1, len(kinds)), 4))
    for ax, kind in zip(np.atleast_1d(axes), kinds, strict=False):
        for label, points in curves[kind].items():
            ns, values = zip(*sorted(points), strict=True)
            ax.plot(ns, values, marker="o", label=label)
        ax.set_xlabel("concurrent requests N")
        ax.set_ylabel("aggregate tok/s" if kind == "decode" else "aggregate prompt tok/s")
        ax.set_title(f"{kind} scaling", fontsize=9)
        ax.set_ylim(bottom=0)
        legend(ax)
    return save_figure(fig, path)


def legend(ax: Any) -> None:
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8)


def save_figure(fig: Any, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
