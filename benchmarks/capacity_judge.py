"""The capacity verdict of agents runs already measured: one line per results file (met, or
the resource its engine counters name), beside the capacity model's prediction for the pool.

    PYTHONPATH=src .venv/bin/python benchmarks/capacity_judge.py --pool-tokens 781040 \\
        --max-num-seqs 41 --chunk 2048 --threshold 1024 tune/capacity/*.json

The workload, its turns and the server's max-model-len are read from each file; the pool and
the profile's knobs are given (results files before 2026-12-06 carry no block count).
The working set starts at the sessions' first prompt as the engine counted it in the file's
own first turns; --nominal uses the longest session instead (every turn at its largest), as a
prediction made without an engine does.
"""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path

from sm121.bench.scenarios.agents.capacity import (
    RUN_PREFIX,
    evidence,
    first_turn_prompt,
    load_shape,
    shape_reuse,
    slo_ttft,
)
from sm121.bench.scenarios.agents.models import AgentsSummary, read_run
from sm121.memory.capacity import Knobs, Pool, predict
from sm121.memory.verdict import judge


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
        raw = path.read_bytes()
        data = json.loads(gzip.decompress(raw) if path.suffix == ".gz" else raw)
        params, server = data["params"], data["server"]
        run = read_run(data["samples"])
        first = None if args.nominal else first_turn_prompt(run)
        shape = load_shape(params["workload"], params["turns"], server["max_model_len"],
                           first, RUN_PREFIX)
        knobs = Knobs(args.max_num_seqs, args.chunk, args.threshold)
        capacity = predict(Pool(args.pool_tokens, args.block_size, "given"), shape, knobs,
                           agents=params["agents"])
        found = evidence(run, AgentsSummary.model_validate(data["summary"]),
                         shape_reuse(shape, args.block_size), shape.turn_new_tokens,
                         slo_ttft(params["slo"]), args.max_num_seqs)
        verdict = judge(found, capacity)
        rows.append({"file": path.name, "agents": params["agents"], "verdict": verdict.line,
                     "resource": verdict.resource.value if verdict.resource else None,
                     "agrees": verdict.agrees(params["agents"]),
                     "working_set_tokens": shape.last_context_tokens,
                     "first_prompt_tokens": shape.first_prompt_tokens,
                     "holds": capacity.predicted})
        if not args.json:
            print(f"{path.name}: {verdict.line}")
    if args.json:
        print(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
