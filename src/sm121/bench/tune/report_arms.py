"""report.md's measured part: the arms (each with the knob it moves), their capacity brackets
with the runs behind them, the in-situ prefill cost against the reference arm, the plans made
before every boot, the pick, the claims, and the distance to the goals."""

from __future__ import annotations

from pathlib import Path

from sm121.bench.tune.result import ArmRow, Probe, TuneRecord, TuneResult

GOAL_AGENTS = 32  # the project's goal: 32 agents at 95% goodput beside the long background job


def _file(probe: Probe) -> str:
    """A probe's results file, relative to the tune's folder (as the report names it)."""
    return f"capacity/{Path(probe.results_file or '?').name}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def _n(value: float | None, fmt: str = ",.0f") -> str:
    return "-" if value is None else format(value, fmt)


def _ci(row: ArmRow) -> str:
    ci = row.goodput_ci
    return f"[{ci[0]:.1%}, {ci[1]:.1%}]" if ci else "-"


def _tested(row: ArmRow) -> str:
    return ", ".join(f"{n} {'met' if met else 'missed'}" for n, met in row.capacity.tested)


def arms_section(state: TuneRecord) -> list[str]:
    result, request = state.result, state.request
    table = result.table
    lines = ["## Arms", "", "![arms](tune-candidates.png)", "",
             f"Baseline `{result.baseline}`; reference arm for the prefill cost "
             f"`{result.reference}`. Every arm holds max-num-seqs >= "
             f"{request.max_agents} + 1 (the most agents tested, and the background job) "
             "but `vllm-defaults`, which sets none of the three knobs.", "",
             "| arm | differs from the baseline in | capacity | N tested (one run each; the "
             f"target {request.agents}: majority of reps) | goodput (good/judged, 95% CI) | "
             "judged TTFT p95 (s) | TTFT p95 during the long prefill (s) | decode p50 tok/s | "
             "long prefill TTFT (s), tok/s | prefill cost vs reference | KV tokens |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in table:
        mark = " (chosen)" if r.name == result.chosen else ""
        lines.append(
            f"| {r.name}{mark} | {', '.join(r.differs) or '(baseline)'} | "
            f"{r.capacity.text} | {_tested(r)} | {_pct(r.goodput)} "
            f"({r.good_turns}/{r.judged_turns}, {_ci(r)}) | "
            f"{_n(r.ttft_p95_judged_s, '.3f')} | "
            f"{_n(r.ttft_p95_during_background_s, '.3f')} | {_n(r.decode_p50, '.1f')} | "
            f"{_n(r.background_ttft_s, '.2f')}, {_n(r.prefill_rate)} | "
            f"{_pct(r.prefill_cost)} | {_n(r.kv_tokens)} |")
    lines += ["", "Runs behind each bracket: the target N's repetitions in ab-agents.json (boot "
              "run ids below), each other N one run in capacity/ARM-agents-N.json on the same "
              "boot.", ""]
    lines += [f"- `{r.name}`: boots {', '.join(r.boots) or '-'}; " + "; ".join(
        f"N={p.agents}: {_file(p)}" for p in r.probes)
        for r in table]
    lines += ["", "What each arm is:", ""]
    lines += [f"- `{c.name}` ({c.source}, from `{c.base}`): {c.why}; args "
              f"{c.args or '(the profile as it is)'}" for c in state.candidates]
    if state.dropped:
        lines += ["", "Not measured twice: " + "; ".join(state.dropped)]
    measured = {r.name for r in table}
    unmeasured = [c.name for c in state.candidates if c.name not in measured]
    if unmeasured:
        lines += ["", f"Not measured (the budget, --max-candidates or a failed boot): "
                  f"{', '.join(unmeasured)}"]
    plans = state.plans
    if plans:
        lines += ["", "## Plans (made again before every boot, from the times measured so far)",
                  "", "| before | budget left (s) | boot (s) | run (s) | arms left | plan: arms x "
                  "reps + probes | fits |", "|---|---|---|---|---|---|---|"]
        lines += [f"| {p.before} | {p.left_s} | {p.boot_s} | {p.rep_s} | "
                  f"{p.arms_left} | {p.arms} x {p.reps} + {p.probes} | "
                  f"{'yes' if p.fits else 'no'} |" for p in plans]
    confirm = state.confirm_plan
    if confirm:
        lines += ["", f"Confirmation: {' and '.join(confirm.finalists)} booted again, "
                  f"interleaved, up to {confirm.boots} boots each, one run at N="
                  f"{request.agents}" + (f" and one at N={confirm.second_n}"
                                         if confirm.second_n else "") +
                  " per boot (confirm/ARM-boot-K-agents-N.json)."]
    lines += ["", "## The pick", "",
              f"Ranked by capacity (the bracket's lo, then hi), arms whose prefill cost is over "
              f"{result.cost_bound:.0%} after the rest, then goodput's lower "
              f"bound: {', '.join(result.ranking)}. Chosen: **{result.chosen}**.", "",
              f"Targets (goodput >= 95%, prefill cost <= 5%): {result.binding.text}", ""]
    lines += _goals(table, result)
    claims = result.claims
    if claims:
        lines += ["## Claims against the baseline", "",
                  "A claim needs >= 3 boots per arm, one knob differing, the effect's 95% "
                  "interval over boots (judged TTFT p95) clear of 0, and the same direction at "
                  "a second N.", ""]
        lines += [f"- {c.text}" for c in claims] + [""]
    return lines


def _goals(table: list[ArmRow], result: TuneResult) -> list[str]:
    chosen = next((r for r in table if r.name == result.chosen), None)
    if chosen is None:
        return []
    cap = chosen.capacity
    out = [f"Goal: at least {GOAL_AGENTS} agents at 95% goodput beside the background job. "
           f"The chosen arm: {cap.text}" + (
               f", so the goal is shown met only if lo >= {GOAL_AGENTS} (lo is {cap.lo})."
               if cap.lo < GOAL_AGENTS else f": met (lo {cap.lo}).")]
    defaults = next((r for r in table if "defaults" in r.role), None)
    if defaults is None:
        out.append("vLLM's defaults were not measured in this sitting: no comparison.")
    else:
        d = defaults.capacity
        out.append(f"vLLM's defaults (same sitting): {d.text}; twice its lo is "
                   f"{2 * d.lo}, the chosen arm's lo {cap.lo}.")
    return [" ".join(out), ""]
