"""The PNG plots of `overlap`: the ongoing stream around the prefill (median repetition),
the output gaps inside the engine window, and the admission ratio per profile."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from sm121.bench.report.plots import legend, plt, save_figure
from sm121.bench.scenarios.overlap.models import OverlapSample
from sm121.bench.stats import Window, clipped_gaps

OverlapGroups = dict[str, list[OverlapSample]]  # label (a profile, or the run) -> repetitions


def _valid(samples: list[OverlapSample]) -> list[OverlapSample]:
    return [s for s in samples if s.metrics.valid]


def _delivered(samples: list[OverlapSample]) -> list[OverlapSample]:
    """Valid repetitions whose stream arrived as generated (decode metrics exist)."""
    return [s for s in _valid(samples) if s.metrics.decode_tokens is not None]


def median_sample(samples: list[OverlapSample]) -> OverlapSample | None:
    """The repetition whose engine-window decode tokens is the median: a typical run."""
    ranked = sorted(_delivered(samples), key=lambda s: s.metrics.decode_tokens or 0)
    return ranked[len(ranked) // 2] if ranked else None


def decode_timeline(groups: OverlapGroups, path: Path) -> Path:
    """Left: the ongoing stream around the prefill (0 = submission; shaded = engine window).
    Right: the same stream inside the engine window only, from its start, where the decode
    the prefill leaves over is visible (the left panel is dominated by undisturbed decode)."""
    fig, (whole, inside) = plt.subplots(1, 2, figsize=(13, 5))
    for index, (label, samples) in enumerate(groups.items()):
        sample = median_sample(samples)
        if sample is None:
            continue
        color, t0 = f"C{index}", sample.long.submitted
        times = np.asarray(sample.ongoing.chunk_times)
        counts = np.cumsum(sample.ongoing.chunk_tokens)
        engine = sample.metrics.windows["engine"]
        whole.plot(times - t0, counts, color=color, label=label, lw=1.2)
        whole.axvspan(engine.start - t0, engine.end - t0, color=color, alpha=0.08)
        whole.axvline(engine.end - t0, color=color, ls=":", lw=0.8)
        mask = (times > engine.start) & (times <= engine.end)
        x = np.concatenate([[0.0], times[mask] - engine.start, [engine.length_s]])
        y = np.concatenate([[0], np.cumsum(np.asarray(sample.ongoing.chunk_tokens)[mask])])
        inside.step(x, np.concatenate([y, y[-1:]]), where="post", color=color,
                    label=f"{label}: {int(y[-1])} tokens in {engine.length_s:.1f} s")
    whole.axvline(0, color="black", lw=0.8)
    whole.set_xlabel("seconds since the long request was submitted")
    whole.set_ylabel("tokens of the ongoing stream (cumulative)")
    whole.set_title("Ongoing stream around the long prefill (median repetition); shaded: "
                    "engine window", fontsize=9)
    inside.set_xlabel("seconds since the engine started the prefill")
    inside.set_ylabel("decode tokens delivered during the prefill")
    inside.set_title("Decode left over by the prefill (engine window)", fontsize=9)
    legend(whole)
    legend(inside)
    return save_figure(fig, path)


def gap_distribution(groups: OverlapGroups, path: Path) -> Path:
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for index, (label, samples) in enumerate(groups.items()):
        gaps: list[float] = []
        for sample in _delivered(samples):
            engine = sample.metrics.windows["engine"]
            gaps += clipped_gaps(sample.ongoing.chunk_times, Window(engine.start, engine.end))
        gaps = [g for g in gaps if g > 0]
        if gaps:
            ordered = np.sort(gaps)
            ax.step(ordered, np.arange(1, len(ordered) + 1) / len(ordered), where="post",
                    color=f"C{index}", label=f"{label} (n={len(ordered)})")
    ax.set_xscale("log")
    ax.set_xlabel("output gap of the ongoing stream inside the engine window (s, log)")
    ax.set_ylabel("fraction of gaps <= x")
    ax.set_title("Output-gap distribution during the prefill (all valid repetitions)",
                 fontsize=9)
    legend(ax)
    return save_figure(fig, path)


def admission(groups: OverlapGroups, path: Path) -> Path:
    labels, medians, lows, highs, ttfts = [], [], [], [], []
    for label, samples in groups.items():
        ratios = [s.metrics.admission_ratio for s in _valid(samples)
                  if s.metrics.admission_ratio]
        if ratios:
            labels.append(label)
            ttfts.append(float(np.median([s.metrics.short_ttft_s for s in _valid(samples)
                                          if s.metrics.admission_ratio])))
            medians.append(float(np.median(ratios)))
            lows.append(medians[-1] - min(ratios))
            highs.append(max(ratios) - medians[-1])
    fig, ax = plt.subplots(figsize=(8, 4.5))
    ax.bar(labels, medians, yerr=[lows, highs], capsize=4,
           color=[f"C{i}" for i in range(len(labels))])
    ax.set_yscale("log")
    ax.set_ylabel("short-request TTFT during prefill / idle TTFT (log)")
    ax.set_title("Admission ratio per profile: short-request TTFT during the prefill / idle "
                 "(median, bars: min-max; label: median TTFT)", fontsize=9)
    for i, (value, ttft) in enumerate(zip(medians, ttfts, strict=True)):
        ax.annotate(f"{value:,.0f}x ({ttft:.2g} s)", (i, value), ha="center", va="bottom",
                    fontsize=8)
    return save_figure(fig, path)
