"""The capacity verdict of agents runs already measured: one line per results file (met, or
the resource its engine counters name), beside the capacity model's prediction for the pool.

    PYTHONPATH=src .venv/bin/python benchmarks/capacity_judge.py --pool-tokens 781040 \\
        --max-num-seqs 41 --chunk 2048 --threshold 1024 tune/capacity/*.json

The workload, its turns and the server's max-model-len are read from each file; the pool and
the profile's knobs are given (results files before 2026-12-06 carry no block count). Each
file is judged as `bench agents` judges a run (capacity.judge_run); --json adds the mean
reuse beside the turns' own expectations, and the turn that fell furthest under its own.
The working set starts at the sessions' first prompt as the engine counted it in the file's
own first turns; --nominal uses the longest session instead (every turn at its largest), as a
prediction made without an engine does.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from committed_runs import read_results

from sm121.bench.scenarios.agents.capacity import judge_run, session_shape
from sm121.bench.scenarios.agents.models import AgentsSummary, read_run
from sm121.bench.scenarios.agents.workload import fit_to_server, load_workload
from sm121.memory.capacity_types import Knobs, Pool


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--pool-tokens", type=int, required=True)
    parser.add_argument("--block-size", type=int, default=16)
    parser.add_argument("--max-num-seqs", type=int)
    parser.add_argument("--chunk", type=int)
    parser.add_argument("--threshold", type=int)
    parser.add_argument("--nominal", action="store_true", help="the longest session, "
                        "as a prediction without an engine, not the run's counted first prompt")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = []
    for path in args.files:
        data = read_results(path)
        params, server = data["params"], data["server"]
        run = read_run(data["samples"])
        turns = params["turns"]
        workload = fit_to_server(load_workload(params["workload"]), server["max_model_len"],
                                 turns)
        judged = judge_run(run, AgentsSummary.model_validate(data["summary"]), workload, turns,
                           params["slo"], Pool(args.pool_tokens, args.block_size, "given"),
                           knobs=Knobs(args.max_num_seqs, args.chunk, args.threshold),
                           shape=session_shape(workload, turns) if args.nominal else None)
        if judged is None:
            print(f"{path.name}: not judged (a run of no fixed turns, or no SLO)",
                  file=sys.stderr)
            continue
        verdict, shape = judged.verdict, judged.shape
        rows.append({"file": path.name, "agents": params["agents"], "verdict": verdict.line,
                     "resource": verdict.resource.value if verdict.resource else None,
                     "agrees": verdict.agrees(params["agents"]),
                     "working_set_tokens": shape.last_context_tokens,
                     "first_prompt_tokens": shape.first_prompt_tokens,
                     "holds": judged.capacity.predicted,
                     "reuse_mean": judged.evidence.reuse_mean,
                     "expected_reuse": judged.evidence.expected_reuse,
                     "worst_turn_reuse": judged.evidence.worst_turn_reuse,
                     "worst_turn_expected": judged.evidence.worst_turn_expected})
        if not args.json:
            print(f"{path.name}: {verdict.line}")
    if args.json:
        print(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
