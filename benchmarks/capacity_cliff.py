"""The capacity model against a measured cliff, on the CPU testbed (issue 44).

Boots the tiny engine with a KV pool made small on purpose (`num-gpu-blocks-override`: the
tiny model's bytes per token are so small that VLLM_CPU_KVCACHE_SPACE's whole GiB would hold
millions of tokens) and a 512-token step (a re-prefilled context then costs many engine steps,
as a large model's does on a GPU, where a cached turn costs one). For each workload it
predicts as `sm121 memory plan --solve agents=N,workload=W --engine-url` does (the pool read
from the engine's /metrics, the first prompt as its /tokenize renders it, counted once), runs
`sm121 bench agents` at the predicted N plus each offset, judges every run against that
prediction (capacity.judge_run, the verdict every agents run gets: memory/verdict.py, from the
run's /metrics deltas and each turn's reuse against its own) and
writes what it found: the measured cliff (the smallest N tested with goodput under 95%), its
bracket, and the error against the predicted cliff (one agent past what the pool holds).

    PYTHONPATH=src nice -n 5 .venv/bin/python benchmarks/capacity_cliff.py \\
        --out docs/results/cpu-testbed/capacity

A shared 2-core machine is noisy: timings differ run to run; the verdicts and the bracket
are what the integration test (tests/integration/test_capacity_cliff.py) asserts.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from sm121.bench.scenarios.agents.capacity import judge_run, session_shape, shape_reuse
from sm121.bench.scenarios.agents.first_prompt import rendered_at
from sm121.bench.scenarios.agents.models import AgentsSummary, read_run
from sm121.bench.scenarios.agents.workload import fit_to_server, load_workload
from sm121.engines.client import kv_pool, max_model_len
from sm121.engines.client_sync import SyncEngineClient
from sm121.memory.capacity import predict
from sm121.memory.capacity_types import Knobs, Pool
from sm121.memory.goodput import GOODPUT_TARGET
from sm121.paths import runs_dir

HERE = Path(__file__).resolve().parent
WORKLOADS = [HERE / "capacity" / "sessions-9k.yaml", HERE / "capacity" / "sessions-15k.yaml"]
SM121 = [sys.executable, "-m", "sm121.cli.main"]


def sm121(*args: str, timeout: float = 900) -> str:
    done = subprocess.run([*SM121, *args], capture_output=True, text=True, timeout=timeout)
    if done.returncode not in (0, 1):
        raise SystemExit(f"sm121 {' '.join(args)} failed ({done.returncode}):\n"
                         f"{done.stdout}\n{done.stderr}")
    return done.stdout


def boot(recipe: str, profile: str, sets: list[str], port: int) -> str:
    out = sm121("serve", recipe, "--profile", profile, *sets, "--port", str(port),
                "--timeout", "1500")
    found = re.search(r"sm121 stop (\S+)", out)
    if not found:
        raise SystemExit(f"no run id in the serve output:\n{out}")
    return found.group(1)


def answers(url: str) -> bool:
    try:
        SyncEngineClient(url, timeout_s=10).get_json("/v1/models")
        return True
    except Exception:  # noqa: BLE001 - any failure means: not this engine, boot one
        return False


def engine(args: argparse.Namespace, sets: list[str], url: str) -> str:
    """The run serving these settings: the one --engine-state names when it still answers
    with the same settings (a GPU sitting's calls share one boot), else a fresh boot (after
    stopping the one recorded there, which holds the GPU's memory)."""
    state = args.engine_state
    wanted = {"recipe": args.recipe, "profile": args.profile, "sets": sets, "port": args.port}
    if state is not None and state.is_file():
        held = json.loads(state.read_text())
        if {k: held.get(k) for k in wanted} == wanted and answers(url):
            print(f"reusing the running engine {held['run_id']}", flush=True)
            return str(held["run_id"])
        sm121("stop", str(held["run_id"]))
        state.unlink()
    run_id = boot(args.recipe, args.profile, sets, args.port)
    if state is not None:
        state.write_text(json.dumps({**wanted, "run_id": run_id}) + "\n")
    return run_id


class OutOfTime(Exception):
    """The next run would not end before --deadline: stop here, keep what was measured."""


def on_sigterm(*_: object) -> None:
    raise OutOfTime("SIGTERM (the call's time)")


def engine_pool(url: str, run_id: str, workload: Path, turns: int, sets: list[str],
                args: argparse.Namespace) -> Pool:
    """The pool the prediction reads: the engine's /metrics (blocks x block size, as `sm121
    memory plan --engine-url` reads it, without its /tokenize: measure renders the first
    prompt once), or, where the engine does not say it there (an engine whose cache-config
    labels give no block count), the run's boot log through `sm121 memory plan --boot-log`."""
    found = kv_pool(SyncEngineClient(url, timeout_s=30).metrics_text())
    if found is not None:
        blocks, size = found
        return Pool(blocks * size, size, f"{url}/metrics")
    asked = json.loads(sm121("memory", "plan", args.recipe, "--profile", args.profile, *sets,
                             "--solve", f"agents=1,workload={workload},turns={turns}",
                             "--boot-log", str(runs_dir() / run_id / "engine.log"), "--json"))
    pool = asked["pool"]
    return Pool(pool["tokens"], pool["block_size"], pool["source"])


def measure(workload: Path, turns: int, url: str, run_id: str, sets: list[str],
            args: argparse.Namespace, runs: list[dict[str, Any]]) -> dict:
    """The prediction for `workload`, then runs at it and around it; `runs` fills as they end
    (a run whose results file is already in --out is read, not run again: a resumed call)."""
    pool = engine_pool(url, run_id, workload, turns, sets, args)
    served = max_model_len(SyncEngineClient(url, timeout_s=30).get_json("/v1/models"))
    # the working set starts at the first prompt as this engine renders it (the tools'
    # schemas through its chat template), not the workload's nominal sizes: counted once,
    # here, and every run is judged against this prediction
    fit_len = int(served or args.max_model_len)
    rendered = asyncio.run(rendered_at(url, str(workload), turns, fit_len))
    fitted = fit_to_server(load_workload(str(workload)), fit_len, turns)
    shape = session_shape(fitted, turns, rendered.first_prompt_tokens,
                          rendered.source(f"{url}/tokenize"), rendered.turn_template_tokens)
    knobs = Knobs(args.max_num_seqs, args.chunk, args.threshold or None)
    capacity = predict(pool, shape, knobs)
    expected = shape_reuse(shape, pool.block_size)
    held = capacity.predicted or 0
    found = {"workload": workload.stem, "turns": turns, "prediction": capacity.headline(),
             "holds": held, "binding": capacity.binding.value if capacity.binding else None,
             "working_set_tokens": shape.last_context_tokens,
             "first_prompt_tokens": shape.first_prompt_tokens,
             "turn_template_tokens": rendered.turn_template_tokens,
             "pool": {"tokens": pool.tokens, "block_size": pool.block_size,
                      "source": pool.source},
             "expected_reuse": expected, "predicted_cliff": held + 1, "runs": runs}

    def run(n: int) -> None:
        out = args.out / f"{workload.stem}-agents-{n}.json"
        if not out.is_file():
            longest = max((r["wall_s"] for r in runs if r.get("wall_s")), default=None)
            need = 1.3 * longest if longest else args.first_run_s
            if args.deadline and time.time() + need > args.deadline:
                raise OutOfTime(f"{workload.stem} N={n} needs about {need:.0f} s")
            began = time.time()
            sm121("bench", "agents", "--url", url, "-n", str(n), "-t", str(turns), "-w",
                  str(workload), "--slo", args.slo, "--out", str(out))
            wall = round(time.time() - began)
        else:
            wall = None
        data = json.loads(out.read_text())
        judged = judge_run(read_run(data["samples"]),
                           AgentsSummary.model_validate(data["summary"]), fitted, turns,
                           args.slo, pool, knobs=knobs, shape=shape)
        if judged is None:
            raise SystemExit(f"{out}: no verdict (the run judged no SLO)")
        e, v = judged.evidence, judged.verdict
        print(f"  {workload.stem} N={n}: {v.line}", flush=True)
        runs.append({"agents": n, "goodput": e.goodput, "verdict": v.line,
                     "resource": None if v.resource is None else v.resource.value,
                     "met": v.met, "reuse_mean": e.reuse_mean, "reuse_min": e.reuse_min,
                     "expected_reuse": e.expected_reuse,
                     "worst_turn_reuse": e.worst_turn_reuse,
                     "worst_turn_expected": e.worst_turn_expected,
                     "preemptions": e.preemptions, "reprefill_per_turn": e.reprefill_per_turn,
                     "last_prompt_tokens": data["summary"]["by_turn"][-1]["prompt_tokens_mean"],
                     "wall_s": wall, "results": out.name})

    for offset in args.offsets:
        run(held + offset)
    # no miss yet: go on one agent at a time, to at most 3 past the prediction
    while all(r["met"] for r in runs) and runs[-1]["agents"] < held + 3:
        run(runs[-1]["agents"] + 1)
    return found


def cliff(found: dict) -> dict:
    """The measured cliff (the smallest N tested with goodput under 95%), its bracket and the
    error against the predicted one, from the runs measured so far."""
    runs = found["runs"]
    missed = [r["agents"] for r in runs if r["goodput"] is not None
              and r["goodput"] < GOODPUT_TARGET]
    at = min(missed) if missed else None
    below = max((r["agents"] for r in runs if at is None or r["agents"] < at), default=None)
    predicted = found["predicted_cliff"]
    return {"measured_cliff": at, "bracket": [below, at], "error_pct": None if at is None
            else round(100 * (at - predicted) / predicted, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--port", type=int, default=18544)
    parser.add_argument("--recipe", default="tiny-cpu")
    parser.add_argument("--profile", default="agent")
    parser.add_argument("--blocks", type=int, default=724, help="num-gpu-blocks-override "
                        "(0: the engine sizes its pool itself, as on a GPU)")
    parser.add_argument("--chunk", type=int, default=512, help="max-num-batched-tokens")
    parser.add_argument("--threshold", type=int, default=0,
                        help="long-prefill-token-threshold (0: the profile's)")
    parser.add_argument("--max-num-seqs", type=int, default=16)
    parser.add_argument("--max-model-len", type=int, default=32768, help="0: the recipe's")
    parser.add_argument("--turns", type=int, default=5, help="turns of a workload named "
                        "without its own (WORKLOAD:TURNS)")
    parser.add_argument("--slo", default="ttft_p95=2s")
    parser.add_argument("--offsets", default="-1,0,1", help="N = the agents the pool holds "
                        "plus each offset")
    parser.add_argument("--workloads", default=",".join(str(w) for w in WORKLOADS),
                        help="presets or files, each optionally :TURNS")
    parser.add_argument("--deadline", type=float, default=0, help="epoch seconds: start no "
                        "run that would not end by then (a device call's limit); what was "
                        "measured is kept and a later call with the same --out resumes")
    parser.add_argument("--first-run-s", type=float, default=150, help="a run's length "
                        "before one was measured, for --deadline")
    parser.add_argument("--engine-state", type=Path, default=None, help="a file naming the "
                        "engine this script booted: a later call with the same settings "
                        "reuses it (and leaves it running); without it the engine is stopped")
    args = parser.parse_args()
    args.offsets = [int(o) for o in args.offsets.split(",")]
    args.out.mkdir(parents=True, exist_ok=True)
    values = {"num-gpu-blocks-override": args.blocks, "max-num-batched-tokens": args.chunk,
              "long-prefill-token-threshold": args.threshold,
              "max-num-seqs": args.max_num_seqs, "max-model-len": args.max_model_len}
    sets = [part for name, value in values.items() if value
            for part in ("--set", f"{name}={value}")]
    started = time.time()
    url = f"http://127.0.0.1:{args.port}"
    found: list[dict] = []
    stopped = None
    run_id = engine(args, sets, url)
    # a device call's limit arrives as SIGTERM (timeout): end as at the deadline. Only after
    # the boot: a boot cut short would leave an engine no state file names.
    signal.signal(signal.SIGTERM, on_sigterm)
    try:
        for spec in args.workloads.split(","):
            name, _, turns = spec.partition(":")
            found.append({"workload": Path(name).stem, "runs": []})
            found[-1] = measure(Path(name), int(turns or args.turns), url, run_id, sets, args,
                                found[-1]["runs"])
    except OutOfTime as exc:
        stopped = str(exc)
    finally:
        if args.engine_state is None:
            sm121("stop", run_id)
    for w in found:
        if "predicted_cliff" in w:
            w.update(cliff(w))
    summary = {"command": " ".join(["benchmarks/capacity_cliff.py", *sys.argv[1:]]),
               "recipe": args.recipe, "profile": args.profile, "engine_sets": sets[1::2],
               "slo": args.slo, "complete": stopped is None, "stopped": stopped,
               "load_average": os.getloadavg(), "wall_s": round(time.time() - started),
               "workloads": found}
    (args.out / "capacity.json").write_text(json.dumps(summary, indent=1) + "\n")
    for w in found:
        if "predicted_cliff" in w:
            print(f"{w['workload']}: {w['prediction']}\n  predicted cliff "
                  f"{w['predicted_cliff']}, measured {w['measured_cliff']} (bracket "
                  f"{w['bracket']}), error {w['error_pct']}%")
    if stopped:
        print(f"stopped before the end ({stopped}): run again with the same --out to resume")
        raise SystemExit(3)


if __name__ == "__main__":
    main()
