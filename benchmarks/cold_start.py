"""What the cold start cost the SLO in every committed agents run with per-turn records, beside
what memory/cold_start.py predicts for each (docs/capacity.md, "The cold start"):

    PYTHONPATH=src .venv/bin/python benchmarks/cold_start.py

Measured, per run: the judged misses the verdict puts in the cold start (capacity.judge_run,
the rule every `bench agents` run prints: a miss sent before the long job, or without one while
a session's first turn still ran, that met no evicted prefix and no long prefill), whether the
cold start alone left goodput at the target, the run's own verdict, and when the first prompts
completed (the last one, and the (N - c + 1)-th: when the model says second turns are first
admitted).

Modelled, with nothing taken from the runs but what every run of the stack shares: the first
prompt as the engine counted it in the run's own first turns, the workload's reply and think
ranges and SLO from the run's config record, the profile's step budget and threshold, and the
prefill rate of a fresh prompt of about the first prompt's length from a knee of the same
stack: the H200's (docs/results/gpu-h200/tune-capacity/tune-results.tar.gz, knee.json: the step
nearest the first prompt; measured there), on the H100 assumed from it (no H100 knee is
committed), on the CPU testbed the CPU tune's (docs/results/cpu-testbed/tune/knee.json, another
day and load).

Runs: every committed agents run, as benchmarks/committed_runs.py yields them (the H100
capacity sittings, the H200 tune sitting, the H200's earlier tune and first agents A/B, the CPU
testbed's capacity cliffs; each with the pool and knobs it ran under, where it says them from).
Runs whose max-num-seqs is under N are listed but not modelled (sequences bind the first
prompts' admission).

Held out: the model's form was written after reading one run's first two turns (the H100
baseline at 17 agents) and the verdicts' cold-start counts already in docs/capacity.md; every
other run's timings were first read by this script.
"""

from __future__ import annotations

import json
import tarfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from committed_runs import CPU, H200, CommittedRun, all_runs

from sm121.bench.scenarios.agents.capacity import judge_run, slo_ttft
from sm121.bench.scenarios.agents.models import AgentsSummary, WorkloadRef, read_run
from sm121.bench.scenarios.agents.workload import Workload
from sm121.bench.scenarios.knee.models import KneeSummary
from sm121.bench.scenarios.knee.nearest_step import nearest_step
from sm121.memory.capacity import Capacity, predict
from sm121.memory.capacity_types import SessionShape
from sm121.memory.cold_start import ColdStartInputs, FreshRate, binds_from, cost
from sm121.memory.cold_start_allowance import cold_start_inputs
from sm121.memory.verdict import MissCause

H200_KNEE = (H200 / "tune-capacity/tune-results.tar.gz", "tune/knee.json")
CPU_KNEE = CPU / "tune/knee.json"


def rate_for(run: CommittedRun, first_prompt: float,
             knees: dict[str, dict[str, Any]]) -> FreshRate:
    """The knee's engine-window prefill rate at the step nearest `first_prompt` (the rule tune's
    predictions take it by: bench/scenarios/knee/nearest_step.py)."""
    knee = knees["CPU" if run.card == "CPU" else "H200"]
    found = nearest_step(KneeSummary.model_validate(knee["summary"]), first_prompt)
    if isinstance(found, str):
        raise SystemExit(f"{run.card} {run.arm}: {found}")
    tok_s, step = found.tok_s, found.step
    where = ("the CPU testbed's tune knee, another day" if run.card == "CPU" else
             "measured on the H200's knee" if run.card == "H200" else "assumed from the H200's knee")
    return FreshRate(tok_s, f"{where}: a fresh {step:,}-token prompt")


@dataclass(frozen=True)
class Row:
    run: CommittedRun
    agents: int
    slots: int
    measured: int | None  # cold-start misses; None: not modelled
    model: float | None
    judged: int
    measured_alone_met: bool | None
    model_alone_met: bool | None
    run_met: bool | None
    last_first: float  # measured: the last first prompt's first token
    release: float | None  # measured: the (N - c + 1)-th
    model_last: float | None
    model_release: float | None
    note: str
    inputs: ColdStartInputs | None = None
    shape: SessionShape | None = None  # as judged: the first prompt the run's turns counted


def evaluate(run: CommittedRun, knees: dict[str, dict[str, Any]]) -> Row | None:
    data = run.data
    samples = data["samples"]
    config = next(s for s in samples if s["kind"] == "config")
    if config.get("session_start", "together") != "together" or not config.get("turns"):
        return None
    read = read_run(samples)
    workload = Workload.model_validate((read.config.workload if read.config else
                                        WorkloadRef()).to_json())
    slo = config["slo"]
    judged = judge_run(read, AgentsSummary.model_validate(data["summary"]), workload,
                       config["turns"], slo, run.pool, knobs=run.knobs)
    if judged is None:
        return None
    agents = config["agents"]
    causes = judged.evidence.miss_causes or {}
    measured = causes.get(MissCause.COLD_START, 0)
    total = agents * max(0, config["turns"] - workload.slo_from_turn)
    firsts = sorted(s["first_token"] for s in samples
                    if s["kind"] == "turn" and s["turn"] == 0 and s["first_token"] is not None)
    shape = judged.shape
    threshold = run.knobs.long_prefill_threshold or 0
    budget = run.knobs.step_budget or 0
    slots = budget // threshold if 0 < threshold < budget else 1
    k = agents - slots + 1
    release = firsts[k - 1] if 1 < k <= len(firsts) else None
    base = dict(run=run, agents=agents, slots=slots, judged=total,
                measured_alone_met=measured <= 0.05 * total, run_met=judged.verdict.met,
                last_first=firsts[-1] if firsts else float("nan"), release=release)
    seqs = run.knobs.max_num_seqs
    if seqs is not None and seqs < agents:
        return Row(**base, measured=measured, model=None, model_alone_met=None,  # type: ignore[arg-type]
                   model_last=None, model_release=None,
                   note=f"max-num-seqs {seqs} < N: not modelled")
    threshold_s = slo_ttft(slo)
    fresh = rate_for(run, shape.first_prompt_tokens or 0, knees)
    inputs = (None if threshold_s is None else
              cold_start_inputs(shape, run.knobs, fresh, threshold_s))
    if inputs is None:
        return Row(**base, measured=measured, model=None, model_alone_met=None,  # type: ignore[arg-type]
                   model_last=None, model_release=None, note="not modelled: no step budget")
    c = cost(inputs, agents)
    note = "" if inputs.second_turn_judged else "second turn not judged"
    return Row(**base, measured=measured, model=c.misses, model_alone_met=c.met,  # type: ignore[arg-type]
               model_last=c.duration_s, model_release=c.release_s or None, note=note,
               inputs=inputs, shape=shape)


def _workload(r: Row) -> str:
    return Path(str(r.run.data["params"]["workload"])).stem


def _t(value: float | None) -> str:
    return "    -" if value is None else f"{value:5.1f}"


def bounds(rows: list[Row], knees: dict[str, dict[str, Any]]) -> list[str]:
    """Where the cold start alone binds, per card, arm and workload modelled (and with the rate
    0.8 and 1.2 times), beside the agents each ran."""
    out, seen = [], set()
    for r in rows:
        key = (r.run.card, r.run.arm, str(r.run.data["params"]["workload"]))
        if r.inputs is None or key in seen:
            continue
        seen.add(key)
        ran = sorted({(x.agents, x.measured_alone_met) for x in rows
                      if (x.run.card, x.run.arm, str(x.run.data["params"]["workload"])) == key})
        spread = [binds_from(replace(r.inputs, rate=FreshRate(r.inputs.rate.tok_s * f, "")))
                  for f in (0.8, 1.2)]
        said = ", ".join(f"{n} {'met' if met else 'missed'}" for n, met in ran)
        where = f"{key[0]} {key[1]}, {Path(key[2]).stem}"
        if not r.inputs.second_turn_judged:
            out.append(f"{where}: the cold start costs no judged turn (the SLO does not judge "
                       f"the second turn); measured alone: {said}")
            continue
        out.append(f"{where}: the cold start alone misses the target from "
                   f"{binds_from(r.inputs)} agents (rate x0.8: {spread[0]}, x1.2: {spread[1]}); "
                   f"measured alone: {said}")
        if r.run.pool is not None and r.shape is not None:
            runs = ", ".join(f"{n} {'met' if met else 'missed'}" for n, met in sorted(
                {(x.agents, bool(x.run_met)) for x in rows
                 if (x.run.card, x.run.arm, str(x.run.data["params"]["workload"])) == key}))
            slo = r.inputs.slo_ttft_s
            without = predict(r.run.pool, r.shape, r.run.knobs, slo_ttft_s=slo)
            both = predict(r.run.pool, r.shape, r.run.knobs, slo_ttft_s=slo,
                           fresh_rate=r.inputs.rate)
            out.append(f"  the prediction: at most {without.predicted} ({_binding(without)}) "
                       f"without the cold start, at most {both.predicted} ({_binding(both)}) "
                       f"with it; the runs: {runs}")
    return out


def _binding(c: Capacity) -> str:
    return f"{c.binding.value} binds" if c.binding is not None else "none known"


def main() -> None:
    with tarfile.open(H200_KNEE[0]) as tar:
        handle = tar.extractfile(H200_KNEE[1])
        assert handle is not None
        knees = {"H200": json.load(handle), "CPU": json.loads(CPU_KNEE.read_text())}
    rows = [row for run in all_runs()
            if (row := evaluate(run, knees)) is not None]
    for rate in sorted({r.inputs.rate for r in rows if r.inputs is not None},
                       key=lambda x: x.source):
        print(f"rate {rate.tok_s:,.0f} tok/s: {rate.source}")
    print("card arm                      budget/thr c   N workload               | cold-start "
          "misses: measured model error | judged | alone met: measured model | run met | "
          "last first prompt s: measured model | 2nd turns admitted s: measured model")
    for r in rows:
        k = r.run.knobs
        workload = Path(str(r.run.data["params"]["workload"])).stem
        model = "    -" if r.model is None else f"{r.model:5.1f}"
        error = "    -" if r.model is None else f"{r.model - (r.measured or 0):+5.1f}"
        alone = "-" if r.model_alone_met is None else str(r.model_alone_met)
        print(f"{r.run.card:4} {r.run.arm:24} {k.step_budget or 0:>5}/"
              f"{k.long_prefill_threshold or 0:<4} {r.slots:<2} {r.agents:2} {workload:22} | "
              f"{r.measured:20} {model} {error} | {r.judged:6} | {r.measured_alone_met!s:>18} "
              f"{alone:>5} | {r.run_met!s:>7} | {r.last_first:27.1f} {_t(r.model_last)} | "
              f"{_t(r.release):>29} {_t(r.model_release)}{f' | {r.note}' if r.note else ''}")
    modelled = [r for r in rows if r.model is not None]
    agree = sum(1 for r in modelled if r.model_alone_met == r.measured_alone_met)
    print(f"modelled {len(modelled)} of {len(rows)} runs; the cold start alone met or missed as "
          f"the model says in {agree} of {len(modelled)}")
    judged2 = [r for r in modelled if r.inputs is not None and r.inputs.second_turn_judged]
    for label, subset in (("runs that judge the second turn", judged2),
                          ("of those, with a cold-start miss measured or modelled",
                           [r for r in judged2 if (r.measured or 0) > 0 or (r.model or 0) >= 0.5])):
        if subset:
            mae = sum(abs((r.model or 0.0) - (r.measured or 0)) for r in subset) / len(subset)
            print(f"  {label}: {len(subset)}, mean |error| {mae:.2f} misses a run; measured "
                  f"{sum(r.measured or 0 for r in subset)}, model "
                  f"{sum(r.model or 0.0 for r in subset):.1f} in all")
    for card in ("H100", "H200"):
        subset = [r for r in judged2 if r.run.card == card and (r.measured or 0) > 0]
        if subset:
            rel = [((r.model or 0.0) - (r.measured or 0)) / (r.measured or 1) for r in subset]
            print(f"  {card}, runs with a cold-start miss measured: {len(subset)}, mean |error| "
                  f"{sum(abs(e) for e in rel) / len(rel):.0%} (range {min(rel):+.0%} to "
                  f"{max(rel):+.0%})")
    for card, workload in sorted({(r.run.card, _workload(r)) for r in judged2}):
        late = [r.last_first / r.model_last - 1 for r in judged2
                if (r.run.card, _workload(r)) == (card, workload) and r.model_last
                and r.agents > r.slots]
        if late:
            print(f"  {card}, {workload}: the last first prompt came {min(late):+.0%} to "
                  f"{max(late):+.0%} after the model's T_cold (median "
                  f"{sorted(late)[len(late) // 2]:+.0%}, {len(late)} runs)")
    for line in bounds(rows, knees):
        print(line)


if __name__ == "__main__":
    main()
