"""The start-up waterfall as a PNG (matplotlib, Agg): one horizontal bar per start, its phases
stacked from the launch to the first generation, cold and warm starts one above the other."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from sm121.launch.startup_waterfall import PHASES, UNATTRIBUTED, Waterfall  # noqa: E402

# One colour per phase, stable across plots; unattributed time is grey on purpose.
_COLOURS = dict(zip(PHASES, [
    "#8c8c8c", "#4c72b0", "#64b5cd", "#55a868", "#c44e52", "#dd8452", "#8172b3",
    "#937860", "#da8bc3", "#ccb974", "#2ca02c", "#d9d9d9",
], strict=True))


def waterfall_png(starts: list[tuple[str, Waterfall]], path: Path) -> Path:
    """`starts`: (label, waterfall), drawn top to bottom in the given order."""
    fig, ax = plt.subplots(figsize=(12, 1.2 + 0.7 * len(starts)))
    shown: set[str] = set()
    for row, (_, waterfall) in enumerate(reversed(starts)):
        for segment in waterfall.segments:
            if segment.seconds <= 0:
                continue
            phase = segment.phase
            ax.barh(row, segment.seconds, left=segment.start_s, height=0.6,
                    color=_COLOURS.get(phase, _COLOURS[UNATTRIBUTED]), edgecolor="white",
                    linewidth=0.5, label=None if phase in shown else phase)
            shown.add(phase)
        ax.text(waterfall.total_s, row, f" {waterfall.total_s:.0f} s "
                f"({waterfall.named_share:.0%} named)", va="center", fontsize=8)
    ax.set_yticks(range(len(starts)), [label for label, _ in reversed(starts)], fontsize=8)
    joined = all(w.joined != "log only" for _, w in starts)
    ax.set_xlabel("seconds since the launch began (launcher clock; log stamps whole seconds)"
                  if joined else "seconds since the log's first line (log stamps, whole seconds)")
    ax.set_title("start-up waterfall: launch to first generation")
    handles, labels = ax.get_legend_handles_labels()
    order = sorted(range(len(labels)), key=lambda i: PHASES.index(labels[i]))
    ax.legend([handles[i] for i in order], [labels[i] for i in order], fontsize=7,
              loc="upper center", bbox_to_anchor=(0.5, -0.35 if len(starts) < 3 else -0.15),
              ncol=6, frameon=False)
    ax.margins(x=0.12)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return path
