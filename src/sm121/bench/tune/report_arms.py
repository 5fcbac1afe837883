"""report.md's measured part: the arms (each with the knob it moves), their capacity brackets
with the runs behind them, the long prefill's cost against the reference arm (in situ and
alone), the plans made before every boot, the pick, the claims, and the distance to the
goals.

Every string read from tune.json or the results files (arm names, knobs, run ids, file
names, an arm's reason and args) is a stranger's: it enters through `display_markdown.inert`.
The sentences sm121 makes of names and numbers (a capacity bracket, the targets' binding)
are made again here from the numbers, with the names inert."""

from __future__ import annotations

from pathlib import Path

from sm121.bench.tune.capacity import text_of
from sm121.bench.tune.pick import binding
from sm121.bench.tune.result import ArmRow, Probe, TuneRecord, TuneResult
from sm121.bench.tune.shown import number, pct
from sm121.display_markdown import inert

GOAL_AGENTS = 32  # the project's goal: 32 agents at 95% goodput beside the long background job


def _file(probe: Probe) -> str:
    """A probe's results file, relative to the tune's folder (as the report names it)."""
    return f"capacity/{inert(Path(probe.results_file or '?').name)}"


def _ci(row: ArmRow) -> str:
    ci = row.goodput_ci
    return f"[{ci[0]:.1%}, {ci[1]:.1%}]" if ci else "-"


def _predicted(row: ArmRow) -> str:
    """The capacity model's prediction beside the measured bracket (docs/capacity.md)."""
    if row.predicted is None:
        return ""
    return f" (predicted {row.predicted}: {inert(row.predicted_binding or '?')} binds)"


def _tested(row: ArmRow) -> str:
    return ", ".join(f"{n} {'met' if met else 'missed'}" for n, met in row.capacity.tested)


def arms_section(state: TuneRecord) -> list[str]:
    result, request = state.chosen(), state.request
    table = result.table
    # The arm that sets none of the engine's knobs (vllm-defaults, llama.cpp-defaults).
    unset = next((c.name for c in state.candidates or [] if "defaults" in c.role), None)
    lines = ["## Arms", "", "![arms](tune-candidates.png)", "",
             f"Baseline {inert(result.baseline, code=True)}; reference arm for the prefill "
             f"cost {inert(result.reference, code=True)}. Every arm holds {request.max_agents} "
             "+ 1 sequences at once (the most agents tested, and the background job)"
             + (f" but {inert(unset, code=True)}, which sets none of the engine's scheduler "
                "knobs." if unset else "."), "",
             "| arm | differs from the baseline in | capacity | N tested (one run each; the "
             f"target {request.agents}: majority of reps) | goodput (good/judged, 95% CI) | "
             "judged TTFT p95 (s) | TTFT p95 during the long prefill (s) | decode p50 tok/s | "
             "long prefill TTFT (s), tok/s | prefill cost vs reference | the same prefill "
             "alone: TTFT (s), cost vs reference | KV tokens |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in table:
        mark = " (chosen)" if r.name == result.chosen else ""
        lines.append(
            f"| {inert(r.name)}{mark} | {', '.join(map(inert, r.differs)) or '(baseline)'} | "
            f"{text_of(r.capacity)}{_predicted(r)} | {_tested(r)} | {pct(r.goodput)} "
            f"({r.good_turns}/{r.judged_turns}, {_ci(r)}) | "
            f"{number(r.ttft_p95_judged_s, '.3f')} | "
            f"{number(r.ttft_p95_during_background_s, '.3f')} | {number(r.decode_p50, '.1f')} | "
            f"{number(r.background_ttft_s, '.2f')}, {number(r.prefill_rate)} | "
            f"{pct(r.prefill_cost)} | {_alone(r)} | {number(r.kv_tokens)} |")
    lines += ["", "The long prefill's cost twice, each against the reference arm: in situ (the "
              "background job inside the agents runs at the target N: what the job pays beside "
              "the agents) and alone (the same prompt on the idle engine once per boot, the "
              "median over the arm's boots: the step budget's own price). In situ the "
              "prefill shares every step with the agents' decodes; alone it does not.", ""]
    lines += ["Runs behind each bracket: the target N's repetitions in ab-agents.json (boot "
              "run ids below), each other N one run in capacity/ARM-agents-N.json on the same "
              "boot.", ""]
    lines += [f"- {inert(r.name, code=True)}: boots {', '.join(map(inert, r.boots)) or '-'}; "
              + "; ".join(f"N={p.agents}: {_file(p)}" for p in r.probes) for r in table]
    candidates = state.candidates or []
    lines += ["", "What each arm is:", ""]
    lines += [f"- {inert(c.name, code=True)} ({inert(c.source)}, from "
              f"{inert(c.base, code=True)}): {inert(c.why)}; args "
              f"{inert(c.args) if c.args else '(the profile as it is)'}" for c in candidates]
    if state.dropped:
        lines += ["", "Not measured twice: " + "; ".join(map(inert, state.dropped))]
    measured = {r.name for r in table}
    unmeasured = [c.name for c in candidates if c.name not in measured]
    if unmeasured:
        lines += ["", f"Not measured (the budget, --max-candidates or a failed boot): "
                  f"{', '.join(map(inert, unmeasured))}"]
    plans = state.plans
    if plans:
        lines += ["", "## Plans (made again before every boot, from the times measured so far)",
                  "", "| before | budget left (s) | boot (s) | run (s) | arms left | plan: arms x "
                  "reps + probes | fits |", "|---|---|---|---|---|---|---|"]
        lines += [f"| {inert(p.before)} | {p.left_s} | {p.boot_s} | {p.rep_s} | "
                  f"{p.arms_left} | {p.arms} x {p.reps} + {p.probes} | "
                  f"{'yes' if p.fits else 'no'} |" for p in plans]
    confirm = state.confirm_plan
    if confirm:
        lines += ["", f"Confirmation: {' and '.join(map(inert, confirm.finalists))} booted "
                  f"again, interleaved, up to {confirm.boots} boots each, one run at N="
                  f"{request.agents}" + (f" and one at N={confirm.second_n}"
                                         if confirm.second_n else "") +
                  " per boot (confirm/ARM-boot-K-agents-N.json)."]
    lines += ["", "## The pick", "",
              f"Ranked by capacity (the bracket's lo, then hi); within equal capacity, arms "
              f"whose prefill cost is over {result.cost_bound:.0%} after the rest, then "
              f"goodput's lower bound: {', '.join(map(inert, result.ranking))}. Chosen: "
              f"**{inert(result.chosen)}**.{_over_bound(table, result)}", "",
              "Targets (goodput >= 95%, prefill cost <= 5%): "
              f"{binding(table, cost=result.cost_bound, show=inert).text}", ""]
    lines += _goals(table, result)
    claims = result.claims
    if claims:
        lines += ["## Claims against the baseline", "",
                  "A claim needs >= 3 boots per arm, one knob differing, the effect's 95% "
                  "interval over boots (judged TTFT p95) clear of 0, and the same direction at "
                  "a second N.", ""]
        lines += [f"- {inert(c.text)}" for c in claims] + [""]
    return lines


def _alone(row: ArmRow) -> str:
    """The exclusive long prefill: median TTFT over the boots that measured one, its cost."""
    boots = row.exclusive_boots
    if not boots:
        return "not measured"
    return (f"{number(row.exclusive_ttft_s, '.2f')} ({boots} boot{'s' if boots > 1 else ''}), "
            f"{pct(row.exclusive_cost)}")


def _over_bound(table: list[ArmRow], result: TuneResult) -> str:
    """When the chosen arm's in-situ prefill cost is over the bound: what the arms within it
    hold (capacity ranks first, tune/choose.rank)."""
    chosen = next((r for r in table if r.name == result.chosen), None)
    if chosen is None or chosen.prefill_cost is None or chosen.prefill_cost <= result.cost_bound:
        return ""
    within = [r.name for r in table if r.prefill_cost is not None
              and r.prefill_cost <= result.cost_bound and "defaults" not in r.role]
    best = next((r for n in result.ranking for r in table if r.name == n and n in within), None)
    held = (f"the best arm within it, {inert(best.name)}, holds {text_of(best.capacity)}"
            if best else "no arm is within it")
    return (f" Its long prefill costs {chosen.prefill_cost:.1%} in situ, over the "
            f"{result.cost_bound:.0%} bound: {held}.")


def _goals(table: list[ArmRow], result: TuneResult) -> list[str]:
    chosen = next((r for r in table if r.name == result.chosen), None)
    if chosen is None:
        return []
    cap = chosen.capacity
    if cap.lo >= GOAL_AGENTS:
        verdict = f": met (lo {cap.lo})."
    elif cap.hi is not None and cap.hi <= GOAL_AGENTS:
        verdict = f": not met (missed at {cap.hi})."
    else:
        verdict = (f": not shown ({GOAL_AGENTS} lies inside the bracket; a run at "
                   f"{GOAL_AGENTS} on this arm would decide).")
    out = [f"Goal: at least {GOAL_AGENTS} agents at 95% goodput beside the background job. "
           f"The chosen arm: {text_of(cap)}{verdict}"]
    defaults = next((r for r in table if "defaults" in r.role), None)
    if defaults is None:
        out.append("vLLM's defaults were not measured in this sitting: no comparison.")
    elif (d := defaults.capacity).hi is None:
        out.append(f"vLLM's defaults (same sitting): {text_of(d)}; with no miss, twice its N* "
                   "has no upper bound: twice the defaults is not shown.")
    else:
        shown = "shown" if cap.lo >= 2 * d.hi else "not shown"
        out.append(f"vLLM's defaults (same sitting): {text_of(d)}, so twice its N* is below "
                   f"{2 * d.hi}; the chosen arm's lo is {cap.lo}: twice the defaults {shown}.")
    return [" ".join(out), ""]
