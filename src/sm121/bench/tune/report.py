"""tune's report: report.md with the knee curves, the candidates against goodput and prefill
cost, the chosen point and the largest N per candidate, and its PNG plots (matplotlib Agg)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from sm121.bench.boot_effect import boot_effects, describe  # noqa: E402


def _n(value: float | None, fmt: str = ",.0f") -> str:
    return "-" if value is None else format(value, fmt)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def knee_plot(summary: dict[str, Any], path: Path) -> Path:
    fig, (pre, dec) = plt.subplots(1, 2, figsize=(12, 4.5))
    for window, style in (("engine", "o-"), ("client", "s--")):
        part = summary[window]
        rows = [r for r in part["prefill"] if r["median"] is not None]
        xs = [r["step"] for r in rows]
        pre.errorbar(xs, [r["median"] for r in rows],
                     yerr=[[r["median"] - r["min"] for r in rows],
                           [r["max"] - r["median"] for r in rows]], fmt=style, capsize=3,
                     label=f"{window} window")
        if part["knee"]["knee_at"]:
            pre.axvline(part["knee"]["knee_at"], ls=":", color="grey")
        rows = [r for r in part["decode"] if r["median"] is not None]
        dec.errorbar([r["batch"] for r in rows], [r["median"] for r in rows],
                     yerr=[[r["median"] - r["min"] for r in rows],
                           [r["max"] - r["median"] for r in rows]], fmt=style, capsize=3,
                     label=f"{window} window")
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


def candidates_plot(table: list[dict[str, Any]], chosen: str | None, path: Path) -> Path:
    fig, (scatter, bars) = plt.subplots(1, 2, figsize=(12, 4.5))
    for row in table:
        if row["goodput"] is None:
            continue
        cost = row["prefill_cost"] or 0.0
        scatter.scatter([cost * 100], [row["goodput"] * 100], s=80,
                        marker="*" if row["name"] == chosen else "o")
        scatter.annotate(row["name"], (cost * 100, row["goodput"] * 100), fontsize=8,
                         xytext=(4, 4), textcoords="offset points")
    scatter.axhline(95, ls=":", color="grey")
    scatter.axvline(5, ls=":", color="grey")
    scatter.set(xlabel="prefill cost vs 8192-token steps (%, knee curve)",
                ylabel="goodput (%, median of repetitions)",
                title="candidates (star: chosen; dotted: targets)")
    names = [r["name"] for r in table]
    bars.bar(range(len(names)), [r["largest_n"] or 0 for r in table])
    bars.set_xticks(range(len(names)), names, rotation=30, ha="right", fontsize=8)
    bars.set(ylabel="agents", title="largest N meeting the SLO (0: none measured)")
    for ax in (scatter, bars):
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def write_report(out: Path, knee: dict[str, Any], ab: dict[str, Any], state: dict[str, Any]
                 ) -> Path:
    summary, result = knee["summary"], state["result"]
    request, table = state["request"], result["table"]
    knee_plot(summary, out / "tune-knee.png")
    candidates_plot(table, result["chosen"], out / "tune-candidates.png")
    engine = summary["engine"]
    lines = [f"# sm121 tune: {request['recipe']}, {request['workload']}, {request['slo']}, "
             f"{request['agents']} agents", "",
             f"{result['device']}, {result['engine']}, {result['date']}. Budget "
             f"{request['budget_s']:.0f} s; spent {state.get('elapsed_s', 0):.0f} s over "
             f"{state.get('resumed', 0) + 1} invocation(s). Plan: {state['plan']}.", "",
             "## The knee", "", "![knee](tune-knee.png)", "",
             "| window | knee (tokens/step) | rate at the knee | peak (at step) | decode "
             "saturation (batch) | decode peak tok/s |", "|---|---|---|---|---|---|"]
    for window in ("engine", "client"):
        k, sat = summary[window]["knee"], summary[window]["decode_saturation"]
        lines.append(f"| {window} | {k['knee_at']} | {_n(k['knee_rate'])} | {_n(k['peak'])} "
                     f"({k['peak_at']}) | {sat['knee_at']}"
                     f"{'' if sat['saturated'] else ' (not saturated)'} | {_n(sat['peak'])} |")
    lines += ["", "Prefill tok/s by step, engine window (median [min-max], "
              f"{summary.get('reps', '?')} reps):", "",
              "| step | " + " | ".join(str(r["step"]) for r in engine["prefill"]) + " |",
              "|---|" + "---|" * len(engine["prefill"]),
              "| tok/s | " + " | ".join(f"{_n(r['median'])} [{_n(r['min'])}-{_n(r['max'])}]"
                                       for r in engine["prefill"]) + " |", "",
              "## Candidates", "", "![candidates](tune-candidates.png)", "",
              "| candidate | step | goodput median [min-max] | reps | judged TTFT p95 (s) | "
              "background TTFT (s) | prefill cost | KV tokens | largest N |",
              "|---|---|---|---|---|---|---|---|---|"]
    for row in table:
        lines.append(f"| {row['name']}{' (chosen)' if row['name'] == result['chosen'] else ''}"
                     f" | {row.get('step')} | {_pct(row['goodput'])} [{_pct(row['goodput_min'])}"
                     f"-{_pct(row['goodput_max'])}] | {row['reps']} | "
                     f"{_n(row['ttft_p95_judged_s'], '.3f')} | "
                     f"{_n(row['background_ttft_s'], '.2f')} | {_pct(row['prefill_cost'])} | "
                     f"{_n(row['kv_tokens'])} | {row['largest_n']} |")
    lines += ["", "What each candidate is:", ""]
    lines += [f"- `{c['name']}` ({c['source']}, from `{c['base']}`): {c['why']}; args "
              f"{c['args'] or '(the profile as it is)'}" for c in state["candidates"]]
    skipped = state.get("skipped") or []
    unmeasured = [c["name"] for c in state["candidates"]
                  if c["name"] not in {r["name"] for r in table}]
    if unmeasured:
        lines += ["", f"Not measured (the budget's plan or a failed boot): "
                  f"{', '.join(unmeasured)}" + (f"; skipped for time: {', '.join(skipped)}"
                                                if skipped else "")]
    lines += ["", "## The pick", "",
              f"Ranked by goodput, then prefill cost, then KV capacity: "
              f"{', '.join(result['ranking'])}. Chosen: **{result['chosen']}**.", "",
              f"Targets (goodput >= 95%, prefill cost <= 5%): {result['binding']['text']}", ""]
    effects = boot_effects(ab.get("samples", []), ["goodput", "ttft_p95_judged_s",
                                                     "background_ttft_s"])
    effect_lines = describe(effects)
    if effect_lines:
        lines += ["## Later repetitions on a boot against its first", ""]
        lines += [f"- {line}" for line in effect_lines] + [""]
    if state.get("written"):
        lines += [f"Written as profile `tuned` into the user's recipe ({state['written']})."]
        if state.get("serve_needs_trust"):
            lines += ["", "Serving it needs `--trust` (the user's copy is not built in): "
                      + "; ".join(state["serve_needs_trust"])]
    path = out / "report.md"
    path.write_text("\n".join(lines) + "\n")
    return path
