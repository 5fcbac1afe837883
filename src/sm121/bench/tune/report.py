"""tune's report: report.md with the knee curves, the candidates against goodput and prefill
cost, the chosen point and the largest N per candidate, and its PNG plots (matplotlib Agg).

tune.json, the results files beside it and a recipe's hooks are a stranger's (tune folders
are shared and resumed): every string of theirs enters the Markdown through
`display_markdown.inert` (docs/stranger-data.md), and the plots' labels are text."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
# Tick labels are arm names from tune.json: text, never mathtext (a `$` in a name is
# matplotlib's math and `$\foo{$` a parse error that stopped the report)
matplotlib.rcParams["text.parse_math"] = False
import matplotlib.pyplot as plt  # noqa: E402

from sm121.bench.boot_effect import boot_effects, describe  # noqa: E402
from sm121.bench.result_models import Number, Stats  # noqa: E402
from sm121.bench.scenarios.knee.models import KneeSummary, KneeWindow  # noqa: E402
from sm121.bench.tune.files import AbFile, KneeFile  # noqa: E402
from sm121.bench.tune.report_arms import arms_section as _arms  # noqa: E402
from sm121.bench.tune.report_predicted import section as predicted_section  # noqa: E402
from sm121.bench.tune.result import ArmRow, TuneRecord  # noqa: E402
from sm121.bench.tune.shown import number  # noqa: E402
from sm121.display import escape  # noqa: E402
from sm121.display_markdown import document, inert  # noqa: E402
from sm121.safe_paths import file_under  # noqa: E402

# An arm's name on a tick label: spelled out and cut, so that a stranger's name neither
# draws missing glyphs nor stretches the figure past its layout
LABEL = 40


def knee_plot(summary: KneeSummary, path: Path) -> Path:
    fig, (pre, dec) = plt.subplots(1, 2, figsize=(12, 4.5))
    for name, style in (("engine", "o-"), ("client", "s--")):
        window = (summary.engine if name == "engine" else summary.client) or KneeWindow()
        steps = [r for r in window.prefill if r.median is not None]
        _errorbar(pre, [r.step for r in steps], steps, style, name)
        if window.knee.knee_at:
            pre.axvline(window.knee.knee_at, ls=":", color="grey")
        batches = [r for r in window.decode if r.median is not None]
        _errorbar(dec, [r.batch for r in batches], batches, style, name)
    pre.set(xscale="log", xlabel="tokens per step", ylabel="prefill tok/s",
            title="prefill rate against step size (dotted: knee)")
    dec.set(xscale="log", xlabel="decode batch", ylabel="aggregate decode tok/s",
            title="decode rate against batch")
    for ax in (pre, dec):
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _errorbar(ax: Any, xs: Sequence[Number | None], rows: Sequence[Stats], style: str,
              window: str) -> None:
    """Medians with their min-max range (rows with a median only)."""
    medians = [r.median or 0.0 for r in rows]
    ax.errorbar(xs, medians, yerr=[[m - (r.min or 0.0) for m, r in zip(medians, rows, strict=True)],
                                   [(r.max or 0.0) - m for m, r in zip(medians, rows, strict=True)]],
                fmt=style, capsize=3, label=f"{window} window")


def candidates_plot(table: list[ArmRow], chosen: str | None, path: Path) -> Path:
    """Each arm's capacity bracket (lo to hi) and its in-situ prefill cost."""
    fig, (caps, costs) = plt.subplots(1, 2, figsize=(12, 4.5))
    names = [escape(r.name, LABEL) for r in table]
    for i, r in enumerate(table):
        cap = r.capacity
        top = cap.hi if cap.hi is not None else cap.lo
        caps.plot([i, i], [cap.lo, top], lw=6, solid_capstyle="butt",
                  color="C1" if r.name == chosen else "C0")
        if cap.hi is None:
            caps.annotate("met at top", (i, cap.lo), fontsize=7, ha="center",
                          xytext=(0, 4), textcoords="offset points")
    caps.set_xticks(range(len(names)), names, rotation=30, ha="right", fontsize=8)
    caps.set(ylabel="agents", title="capacity bracket lo <= N* < hi (orange: chosen)")
    costs.bar(range(len(names)), [100 * (r.prefill_cost or 0) for r in table])
    costs.axhline(5, ls=":", color="grey")
    costs.set_xticks(range(len(names)), names, rotation=30, ha="right", fontsize=8)
    costs.set(ylabel="%", title="long prefill cost in the agents runs, against the reference arm")
    for ax in (caps, costs):
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def write_report(out: Path, knee: KneeFile, ab: AbFile, state: TuneRecord) -> Path:
    """report.md and its plots, from the knee's run, the A/B's results file (the
    repetitions' boot effects read it) and tune.json."""
    summary, result, request = knee.summary, state.chosen(), state.request
    knee_plot(summary, file_under(out, "tune-knee.png"))  # written through no link
    candidates_plot(result.table, result.chosen, file_under(out, "tune-candidates.png"))
    engine = summary.engine or KneeWindow()
    lines = [f"# sm121 tune: {inert(request.recipe)}, {inert(request.workload)}, "
             f"{inert(request.slo)}, {request.agents} agents", "",
             f"{inert(result.device)}, {inert(result.engine)}, {inert(result.date)}. Budget "
             f"{request.budget_s:.0f} s; spent {state.elapsed_s:.0f} s over "
             f"{state.resumed + 1} invocation(s); {len(state.plans)} plans, "
             "one before every boot (below).", "",
             "## The knee", "", "![knee](tune-knee.png)", "",
             "| window | knee (tokens/step) | rate at the knee | peak (at step) | decode "
             "saturation (batch) | decode peak tok/s |", "|---|---|---|---|---|---|"]
    for name, shown in (("engine", summary.engine), ("client", summary.client)):
        window = shown or KneeWindow()
        k, sat = window.knee, window.decode_saturation
        lines.append(f"| {name} | {k.knee_at} | {number(k.knee_rate)} | {number(k.peak)} "
                     f"({k.peak_at}) | {sat.knee_at}"
                     f"{'' if sat.saturated else ' (not saturated)'} | {number(sat.peak)} |")
    lines += ["", "Prefill tok/s by step, engine window (median [min-max], "
              f"{summary.reps if summary.reps is not None else '?'} reps):", "",
              "| step | " + " | ".join(str(r.step) for r in engine.prefill) + " |",
              "|---|" + "---|" * len(engine.prefill),
              "| tok/s | " + " | ".join(f"{number(r.median)} [{number(r.min)}-{number(r.max)}]"
                                       for r in engine.prefill) + " |", "",
              "The knee is short-context (one fresh prompt per step): it is shown, and it "
              "prices nothing below; the long prefill is priced in the agents runs.", ""]
    lines += _arms(state)
    lines += predicted_section(state, ab)
    effects = boot_effects(ab.samples, ["goodput", "ttft_p95_judged_s", "background_ttft_s"])
    effect_lines = describe(effects)
    if effect_lines:
        lines += ["## Later repetitions on a boot against its first", ""]
        lines += [f"- {line}" for line in effect_lines] + [""]
    if state.written:
        lines += ["Written as profile `tuned` into the user's recipe "
                  f"({inert(state.written, code=True)})."]
        if state.serve_needs_trust:  # a recipe's hook commands, among others
            lines += ["", "Serving it needs `--trust` (the user's copy is not built in): "
                      + "; ".join(inert(need) for need in state.serve_needs_trust)]
    path = file_under(out, "report.md")
    path.write_text(document("\n".join(lines) + "\n"))
    return path
