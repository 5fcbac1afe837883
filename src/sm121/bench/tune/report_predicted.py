"""The arms' predictions against their measurements (issue 44, "tune confirms a prediction"),
for report.md and the console: per arm, what the capacity model said before its boot (from
the knee's pool) and from its own boot's pool, the working set a session took before the boot
(the expected session where the knee's engine counted the first prompt, else the longest
one), what the cold start allowed and at which rate (the knee's for a fresh prompt of the
first prompt's length, its source said once above the table), the bracket measured, whether
the prediction lies inside it, and what tune did with the arm (measured; measured last, being
predicted below the target; dropped when the budget ran out; its boot failed, with the
engine's reason).

In report.md every string read from tune.json or the A/B's file (an arm's name, a pool's
source, the engine's own error line) enters through `display_markdown.inert`; the console
lines keep them as they are (the CLI prints them as plain text, escaped)."""

from __future__ import annotations

from collections.abc import Callable

from sm121.bench.tune.capacity import text_of
from sm121.bench.tune.files import AbFile
from sm121.bench.tune.result import ArmRow, PredictionRecord, TuneRecord
from sm121.display_markdown import inert


def against(prediction: int | None, row: ArmRow | None) -> str:
    """Where a prediction of `prediction` agents held lies against the measured bracket."""
    if prediction is None or row is None or not row.capacity.tested:
        return "-"
    cap = row.capacity
    if prediction < cap.lo:
        return f"under: {cap.lo} met"
    if cap.hi is not None and prediction >= cap.hi:
        return f"over: {cap.hi} missed"
    return "inside"


def _best(row: ArmRow | None, found: PredictionRecord | None) -> int | None:
    """The prediction to hold a measurement against: from the arm's own boot where known."""
    if row is not None and row.predicted is not None:
        return row.predicted
    return found.predicted if found else None


def refusals(ab: AbFile | None) -> dict[str, str]:
    """Arms whose every run failed, with the first error (a boot the engine refused)."""
    if ab is None:
        return {}
    errors: dict[str, str] = {}
    measured = {s.profile for s in ab.samples if not s.error}
    for s in ab.samples:
        if s.error and s.profile not in measured:
            errors.setdefault(s.profile, s.error)
    return errors


def reason(error: str) -> str:
    """A failed boot's error in one line: its first line and the engine's cause (launch
    writes it as a `cause:` line: the engine's own words, e.g. vLLM's refusal of fp8 KV)."""
    lines = [line.strip() for line in error.splitlines() if line.strip()]
    if not lines:
        return "no reason recorded"
    cause = next((line for line in lines[1:] if line.startswith("cause:")), None)
    return (f"{lines[0]} ({cause})" if cause else lines[0])[:400]


def outcome(name: str, state: TuneRecord, row: ArmRow | None, refused: dict[str, str],
            show: Callable[[str], str] = str) -> str:
    """What tune did with the arm; `show`: how a string read from a file (why the arm came
    last, the engine's reason) is written (report.md makes it inert Markdown)."""
    found = state.predictions.get(name)
    below = show(found.below) if found and found.below else None
    if row is not None:
        return f"measured last ({below})" if below else "measured"
    if name in refused:
        return f"not measured: its boot failed: {show(reason(refused[name]))}"
    if name in state.skipped:
        return (f"dropped: {below}; the budget ran out" if below else
                "not measured: the budget ran out")
    names = [c.name for c in state.candidates or []]
    most = state.request.max_candidates
    why = (f"--max-candidates {most}" if most is not None and name in names[most:] else
           "the tune stopped before it")
    return f"dropped: {below}; {why}" if below else f"not measured: {why}"


def _before(found: PredictionRecord | None) -> str:
    if found is None:
        return "-"
    if found.predicted is None:
        return "not known"
    return (f"{inert(found.text())}; pool {found.pool_tokens or 0:,} from "
            f"{inert(found.pool_source)}")


def _working_set(found: PredictionRecord | None) -> str:
    if found is None or found.predicted is None:
        return "-"
    return found.working_set()


def _source(found: PredictionRecord) -> str:
    """Where the working set came from, as one sentence."""
    if found.first_prompt_tokens is None:
        return f"Working set: {inert(found.prefix_source)}."
    return (f"The sessions' first prompt: {found.first_prompt_tokens:,} tokens, "
            f"{inert(found.prefix_source)}.")


def _cold_start(found: PredictionRecord | None) -> str:
    """What the cold start allowed before the arm's boot, and at which rate."""
    if found is None or found.predicted is None:
        return "-"
    if found.cold_start is None:
        return "not recorded"
    rate = (f" at {found.cold_prefill_tok_s:,.0f} tok/s" if found.cold_prefill_tok_s
            else " (no rate)" if found.cold_start == "not known" else "")
    return f"{inert(found.cold_start)}{rate}"


def _rate(state: TuneRecord) -> list[str]:
    """The cold start's rate and its source, or why there is none (tune/cold_rate.py)."""
    if state.cold_rate is None:
        return []
    return [f"The cold start's rate (a fresh first prompt's prefill): "
            f"{inert(state.cold_rate.text())}.", ""]


def _own(row: ArmRow | None, show: Callable[[str], str] = str) -> str:
    if row is None or row.predicted is None:
        return "-"
    return f"{row.predicted} agents ({show(row.predicted_binding or '?')} binds)"


def section(state: TuneRecord, ab: AbFile | None) -> list[str]:
    """report.md's section; none for a tune made before predictions were recorded."""
    if not state.predictions:
        return []
    result, request = state.chosen(), state.request
    rows = {r.name: r for r in result.table}
    refused = refusals(ab)
    lines = ["## Predicted against measured", "",
             "Before any boot each arm's capacity was predicted from the knee's boot (the pool "
             "of the same memory settings, scaled to the arm's KV dtype); an arm predicted "
             f"below the target {request.agents} was measured after the others and is the "
             "first left out when the budget runs short. A session's working set is the "
             "expected session where the knee's engine counted the workload's first prompt "
             "(its tools as the chat template renders them), else the longest session, a bound "
             "that errs low. The cold start (every session's first prompt at once, second "
             "turns queued behind them) takes the knee's prefill rate at the prompt length "
             "nearest the first prompt it counted; without both it is not known. After its "
             "boot, each arm's own pool predicts again with the same (its search's first "
             "probes). docs/capacity.md has the model.", ""]
    if state.kv_arm:
        lines += [f"{inert(state.kv_arm)}.", ""]
    sources = dict.fromkeys(_source(p) for p in state.predictions.values() if p.prefix_source)
    lines += [*sources, ""] if sources else []
    lines += _rate(state)
    lines += ["| arm | predicted before its boot | working set | the cold start before its "
              "boot | predicted from its own boot | measured capacity | the prediction "
              "against it | what tune did |",
              "|---|---|---|---|---|---|---|---|"]
    for c in state.candidates or []:
        row = rows.get(c.name)
        found = state.predictions.get(c.name)
        lines.append(f"| {inert(c.name)} | {_before(found)} | {_working_set(found)} | "
                     f"{_cold_start(found)} | {_own(row, inert)} | "
                     f"{text_of(row.capacity) if row else 'not measured'} | "
                     f"{against(_best(row, found), row)} | "
                     f"{outcome(c.name, state, row, refused, inert)} |")
    return lines + [""]


def console(state: TuneRecord, ab: AbFile | None) -> list[str]:
    """One line per arm: predicted against measured, or why it was not measured."""
    if not state.predictions or state.result is None:
        return []
    rows = {r.name: r for r in state.result.table}
    refused = refusals(ab)
    out = []
    for c in state.candidates or []:
        row = rows.get(c.name)
        found = state.predictions.get(c.name)
        said = found.text() if found else "not known"
        if row is None:
            out.append(f"{c.name}: predicted {said}; {outcome(c.name, state, row, refused)}")
            continue
        own = f"; from its own boot {_own(row)}" if row.predicted is not None else ""
        out.append(f"{c.name}: predicted {said}{own}; measured {row.capacity.text} "
                   f"(the prediction: {against(_best(row, found), row)})")
    return out
