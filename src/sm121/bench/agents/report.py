"""Report pieces for agent runs (agents, replay, an A/B of profiles, a sweep over N): the
Markdown section with plots, the terminal summary, and the timestamp-first ratio. Every
number is recomputed from the raw turn records, so a results file is its own evidence."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sm121.bench.agents import plots
from sm121.bench.agents.choose import largest_meeting
from sm121.bench.agents.summary import flatten, summarize_agents, turns_of
from sm121.bench.report.compare import compare_with
from sm121.bench.report.format import fmt, table_rows
from sm121.bench.report.format import markdown_table as _table
from sm121.bench.scenarios import get
from sm121.engines.registry import metric_names


def _ttft(p: dict[str, Any]) -> list[str]:
    return [fmt(p.get("p50"), "s"), fmt(p.get("p95"), "s"), fmt(p.get("p99"), "s")]


def rejudge(data: dict[str, Any], slo: str) -> dict[str, Any]:
    """The same raw turns judged against another SLO (`bench report --slo`): every run's
    config record carries the SLO its summary uses."""
    runs = [data["samples"]] if data["kind"] == "scenario" else \
        [e["samples"] for e in data["samples"] if not e.get("error")]
    for samples in runs:
        for sample in samples:
            if sample.get("kind") == "config":
                sample["slo"] = slo
    if data["kind"] == "sweep":
        data.setdefault("summary", {})["slo"] = slo
    return data


def recompute(data: dict[str, Any]) -> dict[str, Any]:
    """An A/B's or sweep's metrics again from the raw turns, with this sm121's functions."""
    if data["kind"] in ("ab", "sweep"):
        for entry in data["samples"]:
            if not entry.get("error"):
                entry["metrics"] = flatten(entry["samples"])
    if data["kind"] == "ab":
        measured = [e for e in data["samples"] if not e.get("error")]
        data["summary"] = compare_with(get(data["scenario"]), measured,
                                       data["params"]["profiles"])
    if data["kind"] == "sweep":
        data.setdefault("summary", {})["largest_n"] = largest_meeting(data["samples"])
    return data


def _judged(s: dict[str, Any]) -> str:
    first = s.get("judged_from_turn") or 0
    return "all turns" if not first else f"turns {first + 1}+ (a session's first turn is its " \
        "cold start-up prefill, shown apart)"


def summary_lines(s: dict[str, Any]) -> list[str]:
    """The run in Markdown: verdict, TTFT, by turn, per agent, background, engine, client."""
    slo = s["slo"]
    lines = [f"Workload **{s.get('workload')}**, {s.get('agents')} agents, {s['turns']} turns; "
             f"tools: {s.get('tools_mode')}. Usage cross-check held on {s['usage_checked']}/"
             f"{s['turns']} turns; prompt exact to the token on {s['prompt_exact']}/"
             f"{s['turns']}.", "",
             f"Goodput **{fmt(slo['goodput'], 'pct')}** ({slo['good_turns']}/{slo['turns']} "
             f"turns meet every term of `{slo['slo']}`); SLO "
             f"{'**met**' if slo['met'] else '**not met**'}. Judged: {_judged(s)}.", ""]
    lines += _table(["SLO term", "observed", "met", "turns meeting"], [
        [r["term"], fmt(r["observed"]), "yes" if r["met"] else "no", str(r["turns_meeting"])]
        for r in slo["terms"]])
    lines += _table(["TTFT (agent turns)", "p50", "p95", "p99"], [
        ["all turns", *_ttft(s["ttft"])], ["judged by the SLO", *_ttft(s["ttft_judged"])]])
    lines += _table(["turn", "n", "TTFT p50", "p95", "p99", "reuse mean", "reuse min",
                     "prompt tokens"], [
        [str(r["turn"] + 1), str(r["n"]), fmt(r["ttft_p50_s"], "s"), fmt(r["ttft_p95_s"], "s"),
         fmt(r["ttft_p99_s"], "s"), fmt(r["reuse_mean"], "pct"), fmt(r["reuse_min"], "pct"),
         fmt(r["prompt_tokens_mean"], "int")] for r in s["by_turn"]])
    lines += _table(["agent", "turns", "decode tok/s p50", "decode p5", "TTFT p95"], [
        [str(a["agent"]), str(a["turns"]), fmt(a["decode_p50"]), fmt(a["decode_p5"]),
         fmt(a["ttft_p95_s"], "s")] for a in s["per_agent"]])
    background = s.get("background")
    if background:
        lines += [f"Background job: {fmt(background['prompt_tokens'], 'int')} prompt tokens, "
                  f"TTFT {fmt(background['ttft_s'], 's')}; {background['turns_during']} agent "
                  "turns waited for their first token during its prefill.", ""]
        lines += _table(["agent turns", "TTFT p50", "p95", "p99"], [
            ["judged turns during the background prefill", *_ttft(background["ttft_during"])],
            ["judged turns outside it", *_ttft(background["ttft_outside"])]])
    if s.get("queue_wait"):
        lines += [f"Gateway queue wait: p50 {fmt(s['queue_wait']['p50'], 's')}, p95 "
                  f"{fmt(s['queue_wait']['p95'], 's')}.", ""]
    cpu = s["client_cpu"]
    lines += [f"Bench client CPU during a turn (share of one core, whole client): p50 "
              f"{fmt(cpu['share_p50'], 'pct')}, max {fmt(cpu['share_max'], 'pct')}.", ""]
    return lines


def _engine_lines(summary: dict[str, Any]) -> list[str]:
    deltas = summary.get("engine_metrics") or {}
    if not deltas:
        return []
    return ["Engine /metrics deltas over the run: " + ", ".join(
        f"`{_short(k)}` {fmt(v, 'int') if v >= 10 else fmt(v)}"
        for k, v in deltas.items()) + f"; prefix-cache hit rate "
        f"{fmt(summary.get('prefix_reuse_metrics'), 'pct')}.", ""]


def _short(metric: str) -> str:
    """A metric name without its engine's namespace, for a readable line."""
    for namespace in metric_names().namespaces:
        metric = metric.removeprefix(namespace)
    return metric


def _replay_lines(summary: dict[str, Any]) -> list[str]:
    gaps = summary.get("gaps")
    if not gaps:
        return []
    return [f"Replay: {summary['sessions']} sessions; {gaps['gaps']} inter-arrival gaps, "
            f"{gaps['within_10pct']} within 10% of the original (over --speed); relative "
            f"error median {fmt(gaps['median_rel_error'], 'pct')}, max "
            f"{fmt(gaps['max_rel_error'], 'pct')}; latest start {fmt(summary['late_max_s'], 's')}"
            " after its scheduled time.", ""]


def _scenario_plots(data: dict[str, Any], out: Path, stem: str) -> list[Path]:
    groups = {stem: data["samples"]}
    return [plots.timeline(groups, out / f"{stem}-timeline.png"),
            plots.ttft_cdf(groups, out / f"{stem}-ttft-cdf.png"),
            plots.reuse_per_turn(groups, out / f"{stem}-reuse.png")]


def scenario_section(data: dict[str, Any], files: list[Path]) -> list[str]:
    samples = data["samples"]
    summary = {**(data.get("summary") or {}), **summarize_agents(samples)}
    return [*summary_lines(summary), *_engine_lines(summary), *_replay_lines(summary),
            *[f"![{f.stem}]({f.name})" for f in files], ""]


def ab_groups(data: dict[str, Any]) -> dict[str, plots.Groups]:
    """One run per profile for the timeline (the first measured rep), all reps for the CDF."""
    first: dict[str, list[dict[str, Any]]] = {}
    every: dict[str, list[dict[str, Any]]] = {p: [] for p in data["params"]["profiles"]}
    for entry in data["samples"]:
        if entry.get("error"):
            continue
        first.setdefault(entry["profile"], entry["samples"])
        every[entry["profile"]].extend(entry["samples"])
    return {"first": first, "every": every}


def _ab_plots(data: dict[str, Any], out: Path, stem: str) -> list[Path]:
    groups = ab_groups(data)
    return [plots.timeline(groups["first"], out / f"{stem}-timeline.png"),
            plots.ttft_cdf(groups["every"], out / f"{stem}-ttft-cdf.png"),
            plots.reuse_per_turn(groups["every"], out / f"{stem}-reuse.png")]


def ab_section(data: dict[str, Any], files: list[Path]) -> list[str]:
    verdict = (data.get("summary") or {}).get("verdict") or {}
    lines = [f"**Best profile by goodput: {verdict.get('best', '-')}**. "
             f"{verdict.get('why', '')}", ""] if verdict else []
    rows = []
    for entry in data["samples"]:
        if entry.get("error"):
            rows.append([entry["profile"], str(entry["rep"] + 1), "failed", "-", "-", "-", "-",
                         "-"])
            continue
        m = entry["metrics"]
        rows.append([entry["profile"], str(entry["rep"] + 1), fmt(m.get("goodput"), "pct"),
                     fmt(m.get("ttft_p50_s"), "s"), fmt(m.get("ttft_p95_s"), "s"),
                     fmt(m.get("ttft_p95_judged_s"), "s"),
                     fmt(m.get("ttft_p95_during_background_s"), "s"),
                     fmt(m.get("background_ttft_s"), "s")])
    lines += ["Per repetition (in run order):", ""]
    lines += _table(["profile", "rep", "goodput", "TTFT p50", "TTFT p95 (all)",
                     "TTFT p95 (judged)", "judged TTFT p95 during background",
                     "background TTFT"], rows)
    lines += [f"Failed: rep {e['rep'] + 1} {e['profile']}: {e['error']}"
              for e in data["samples"] if e.get("error")]
    served: dict[str, dict[str, Any]] = {}
    for entry in data["samples"]:
        if not entry.get("error"):
            served.setdefault(entry["profile"], entry.get("engine_args") or {})
    lines += ["", "Engine args per profile (as served by sm121):", ""] + [
        f"- `{p}`: " + ", ".join(f"{k}={v}" for k, v in args.items()
                                 if k.startswith(("max-num", "long-prefill", "tool")))
        for p, args in served.items()]
    return lines + [""] + [f"![{f.stem}]({f.name})" for f in files] + [""]


def _points(data: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"agents": s["agents"], **s["metrics"]} for s in data["samples"]
            if not s.get("error")]


def _sweep_plots(data: dict[str, Any], out: Path, stem: str) -> list[Path]:
    return [plots.knee(_points(data), out / f"{stem}-knee.png")]


def sweep_section(data: dict[str, Any], files: list[Path]) -> list[str]:
    points = _points(data)
    summary = data.get("summary") or {}
    lines = [f"Largest N meeting `{summary.get('slo')}`: **{summary.get('largest_n', '-')}**.",
             ""]
    lines += _table(["N", "goodput", "SLO met", "TTFT p50", "TTFT p95", "decode p50"], [
        [str(p["agents"]), fmt(p.get("goodput"), "pct"), "yes" if p.get("slo_met") else "no",
         fmt(p.get("ttft_p50_s"), "s"), fmt(p.get("ttft_p95_s"), "s"), fmt(p.get("decode_p50"))]
        for p in points])
    return lines + [f"![{f.stem}]({f.name})" for f in files] + [""]


def plots_of(data: dict[str, Any], out: Path, stem: str) -> list[Path]:
    """The PNGs of an agents or replay run, an A/B of them or a sweep (the registry's plots)."""
    draw = {"ab": _ab_plots, "sweep": _sweep_plots}.get(data["kind"], _scenario_plots)
    return draw(data, out, stem)


def section(data: dict[str, Any], files: list[Path]) -> list[str]:
    """The registry's section: the headline table, then the run, A/B or sweep in detail."""
    text = {"ab": ab_section, "sweep": sweep_section}.get(data["kind"], scenario_section)
    return _table(*table_rows(data)) + text(data, files)


def timestamp_ratio(runs: list[dict[str, Any]]) -> list[str]:
    """Per-turn TTFT of timestamp-first over coding-agent (the field's 39.6x), when a report
    holds one run of each."""
    def by_turn(data: dict[str, Any]) -> dict[int, dict[str, Any]]:
        rows = summarize_agents(data["samples"])["by_turn"]
        return {r["turn"]: r for r in rows if r["ttft_p50_s"]}

    named = {summarize_agents(d["samples"]).get("workload"): d for d in runs
             if d["kind"] == "scenario" and turns_of(d["samples"])}
    if "coding-agent" not in named or "timestamp-first" not in named:
        return []
    clean, stamped = by_turn(named["coding-agent"]), by_turn(named["timestamp-first"])
    rows = [[str(t + 1), fmt(clean[t]["ttft_p50_s"], "s"), fmt(stamped[t]["ttft_p50_s"], "s"),
             fmt(stamped[t]["ttft_p50_s"] / clean[t]["ttft_p50_s"], "x"),
             fmt(clean[t]["reuse_mean"], "pct"), fmt(stamped[t]["reuse_mean"], "pct"),
             f"{fmt(clean[t]['prompt_tokens_mean'], 'int')} / "
             f"{fmt(stamped[t]['prompt_tokens_mean'], 'int')}"]
            for t in sorted(set(clean) & set(stamped))]
    return ["## timestamp-first vs coding-agent", "",
            "Median TTFT per turn over the agents; the ratio is what a mutating field at the "
            "top of the prompt costs per turn (the field report: 39.6x on DS4). Turn 1 is cold "
            "in both.", "",
            *_table(["turn", "coding-agent TTFT", "timestamp-first TTFT", "ratio",
                     "reuse (coding-agent)", "reuse (timestamp-first)", "prompt tokens"], rows)]


def console_lines(summary: dict[str, Any]) -> list[str]:
    slo = summary["slo"]
    ttft = summary["ttft"]
    reuse = summary["reuse_after_first"]
    lines = [f"{summary.get('workload')}: {summary.get('agents')} agents, {summary['turns']} "
             f"turns (usage cross-check {summary['usage_checked']}/{summary['turns']}, tools "
             f"{summary.get('tools_mode')})",
             f"TTFT p50 {fmt(ttft['p50'], 's')}, p95 {fmt(ttft['p95'], 's')}, p99 "
             f"{fmt(ttft['p99'], 's')} (judged turns: p95 "
             f"{fmt(summary['ttft_judged']['p95'], 's')}); decode p50 "
             f"{fmt(summary['decode_p50'])} tok/s; reuse "
             f"after turn 1: mean {fmt(reuse['mean'], 'pct')}, min {fmt(reuse['min'], 'pct')}",
             f"goodput {fmt(slo['goodput'], 'pct')} against {slo['slo']} over "
             f"{_judged(summary).split(' (')[0]}: SLO "
             f"{'met' if slo['met'] else 'not met'} (" + ", ".join(
                 f"{r['term']}: {fmt(r['observed'])}" for r in slo["terms"]) + ")"]
    background = summary.get("background")
    if background:
        lines.append(f"background job: TTFT {fmt(background['ttft_s'], 's')}; judged agent "
                     f"TTFT p95 during its prefill {fmt(background['ttft_during']['p95'], 's')}, "
                     f"outside {fmt(background['ttft_outside']['p95'], 's')}")
    return lines


def console(summary: dict[str, Any]) -> list[str]:
    """The registry's terminal summary of one run; none while the run has no verdict yet."""
    return console_lines(summary) if summary.get("slo") else []
