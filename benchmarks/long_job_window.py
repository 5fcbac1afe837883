"""What the long job's window cost the SLO in the committed coding-agent-with-batch runs,
beside what memory/long_job_window.py predicts for each (docs/capacity.md, "The long job's
window"):

    PYTHONPATH=src .venv/bin/python benchmarks/long_job_window.py [--turns]

Runs: the H100 capacity sittings (docs/results/gpu-h100/capacity/capacity-tuned and
capacity-baseline, the latter measured after the model was written: held out) and the H200
tune (docs/results/gpu-h200/tune-capacity), as benchmarks/committed_runs.py reads them, each
with the pool and knobs it ran under.

Measured, per run: the job's window (its submission to its first token), the deficit at its
end (the sessions' contexts then, each its last turn sent by then with its reply, plus the job,
less the pool), the KV usage peak inside the window, and the judged turns of the window's wake
(sent from the job's submission until it finished plus the workload's longest think time) that
re-prefilled more than twice what a cached turn adds ("evicted"), and of those the ones over
the SLO: the window's misses. --turns lists the evicted turns.

Modelled, with nothing taken from these runs: the workload preset (its first prompt as the
engine counted it: the same count for every run), the pool, the knobs, the SLO and the job's
prefill rate at its depth from the H200 overlap A/B (RATES below; assumed on the H100).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, replace
from typing import Any

from committed_runs import CommittedRun, h100_runs, h200_tune_runs

from sm121.bench.scenarios.agents.capacity import RUN_PREFIX, first_turn_prompt, load_shape
from sm121.bench.scenarios.agents.models import read_run
from sm121.memory.capacity import Pool, window_inputs
from sm121.memory.long_job_window import JobRate, binds_from, cost

WORKLOAD = "coding-agent-with-batch"
# A 100K-token prefill beside one decode stream on the H200 (vLLM 0.21.0, the random-weight
# Llama-8B shape, chunk 2048), engine window, median of 3 reps, by the threshold that caps its
# steps: docs/results/gpu-h200/ab-reps/report.md (agent-admission: 1024; lpt-512: 512).
# A lone job takes one threshold chunk a step whatever the step budget, so the figure serves
# chunk 4096 and 8192 too; on the H100 (the same bf16 tensor peak as the H200) it is assumed.
RATES = {1024: 14_707, 512: 13_741}
RATE_SOURCE = "the H200 overlap A/B (a lone 100K prefill, ab-reps)"


@dataclass(frozen=True)
class Measured:
    agents: int
    window_s: float
    deficit: float
    kv_peak: float | None
    evicted: list[dict[str, Any]]
    misses: int  # evicted judged turns of the wake over the SLO
    all_misses: int
    judged: int


def measure(run: CommittedRun, pool: Pool, slo: float, evicted_over: float) -> Measured:
    samples = run.data["samples"]
    config = next(s for s in samples if s["kind"] == "config")
    job = next(s for s in samples if s["kind"] == "background")
    start, end = job["submitted"], job["first_token"]
    wake = job["finished"] + config["workload"]["think_time_s"]["max"]
    turns = sorted((s for s in samples if s["kind"] == "turn"), key=lambda s: s["submitted"])
    context = {t["agent"]: t["prompt_tokens"] + t["completion_tokens"]
               for t in turns if t["submitted"] <= end}
    judged = [t for t in turns if t["turn"] >= config["workload"]["slo_from_turn"]]
    evicted = [t for t in judged if start <= t["submitted"] <= wake
               and t["prompt_tokens"] - (t["cached_tokens"] or 0) > evicted_over]
    gauges = next((s for s in samples if s["kind"] == "gauges"), None)
    inside = [p[1] for p in (gauges or {}).get("series", []) if start <= p[0] <= end
              and p[1] is not None]
    return Measured(
        agents=config["agents"], window_s=end - start,
        deficit=sum(context.values()) + job["prompt_tokens"] - pool.tokens,
        kv_peak=max(inside) if inside else None, evicted=evicted,
        misses=sum(1 for t in evicted if t["ttft_s"] > slo),
        all_misses=sum(1 for t in judged if t["ttft_s"] is None or t["ttft_s"] > slo),
        judged=len(judged))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", action="store_true", help="list each run's evicted turns")
    args = parser.parse_args()
    slo = 2.0
    print("card arm             chunk/thr  N  window  deficit at its end   KV peak  evicted  "
          "window misses: measured  model  error | all misses | window alone met? "
          "measured model")
    errors: list[float] = []
    inputs = {}
    for run in [*h100_runs(), *h200_tune_runs()]:
        chunk = run.knobs.step_budget or 0
        threshold = run.knobs.long_prefill_threshold or 0
        if (run.pool is None or run.data["params"]["workload"] != WORKLOAD
                or not 0 < threshold < chunk):
            continue  # no threshold under the budget: the job takes whole steps (admission)
        read = read_run(run.data["samples"])
        shape = load_shape(WORKLOAD, run.data["params"]["turns"],
                           run.data["server"]["max_model_len"], first_turn_prompt(read),
                           RUN_PREFIX)
        rate = JobRate(RATES[threshold], ("measured there" if run.card == "H200" else
                                              "assumed from the H200") + f", {RATE_SOURCE}")
        w, _ = window_inputs(run.pool, shape, threshold, rate, slo)
        inputs[(run.card, run.arm)] = w
        m = measure(run, run.pool, slo, 2 * shape.turn_new_tokens)
        model = cost(w, m.agents)
        met = m.misses <= 0.05 * m.judged
        error = ""
        if m.misses or model.misses >= 0.5:
            errors.append((model.misses - m.misses) / max(1, m.misses))
            error = f"{errors[-1]:+.0%}"
        peak = "-" if m.kv_peak is None else f"{m.kv_peak:.2f}"
        deficits = f"{m.deficit / 1e3:+7.1f}K (model {model.deficit_tokens / 1e3:+7.1f}K)"
        print(f"{run.card} {run.arm:15} {chunk:>5}/{threshold:<4} {m.agents:2} "
              f"{m.window_s:5.1f} s  {deficits}"
              f"  {peak:>5}  {len(m.evicted):4}  {m.misses:19}  {model.misses:5.1f}  {error:>5} | "
              f"{m.all_misses:3}/{m.judged:<3} | {met!s:>8} {model.met!s:>5}")
        if args.turns:
            job = next(s for s in run.data["samples"] if s["kind"] == "background")
            for t in m.evicted:
                sent = t["submitted"] - job["submitted"]
                again = t["prompt_tokens"] - (t["cached_tokens"] or 0)
                print(f"      agent {t['agent']:2} turn {t['turn']} sent {sent:+5.1f} s after "
                      f"the job: re-prefilled {again:6,} of {t['prompt_tokens']:,}, TTFT "
                      f"{t['ttft_s']:.2f} s")
    if errors:
        print(f"model error on the runs whose window missed turns: mean |error| "
              f"{sum(abs(e) for e in errors) / len(errors):.0%}, range {min(errors):+.0%} to "
              f"{max(errors):+.0%} ({len(errors)} runs)")
    for (card, arm), w in inputs.items():
        spread = [binds_from(replace(w, rate=JobRate(w.rate.tok_s * f, w.rate.source)))
                  for f in (0.8, 1.2)]
        first = binds_from(w) or 0
        below = ", ".join(f"{n}: {cost(w, n).misses:.1f} of {cost(w, n).judged}"
                          for n in (first - 2, first - 1, first))
        print(f"{card} {arm}: the window alone misses the goodput target from "
              f"{first} agents (misses at {below}; rate x0.8: from {spread[0]}, x1.2: from "
              f"{spread[1]}); idle "
              f"prefixes evicted past {int((w.pool_tokens - w.job_tokens) // w.context_tokens)}; "
              f"R_slo {w.reprefill_within_slo:,.0f} tokens, an agent returns every "
              f"{w.cycle_steps:.0f} steps, a session holds {w.context_tokens:,.0f} at the job's end")


if __name__ == "__main__":
    main()
