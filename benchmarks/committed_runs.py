"""The committed agents runs, each once, with the pool and knobs it ran under: the one reader
of docs/results' run files for the benchmarks that set a model beside them
(benchmarks/long_job_window.py, benchmarks/cold_start.py; capacity_judge.py reads a file
given on its command line with read_results).

Sittings, in the order all_runs yields them:
- the H100 capacity sittings (gpu-h100/capacity/capacity-tuned, capacity-baseline): the pool
  and knobs from each file's verdict record;
- the H200 tune sitting (gpu-h200/tune-capacity/tune-results.tar.gz, read in place): each
  arm's pool and knobs from verdicts.txt (the files' verdicts were judged against those);
- the H200's earlier tune and first agents A/B (gpu-h200/tune/tune-results.tar.gz, agents/):
  no pool is recorded; the knobs from their A/B files' engine args;
- the CPU testbed's capacity cliffs (cpu-testbed/capacity: --set max-num-batched-tokens=512,
  no threshold; the gauges runs: the tiny-cpu agent profile's 2048, --set max-num-seqs=2).
"""

from __future__ import annotations

import gzip
import json
import re
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sm121.memory.capacity_types import Knobs, Pool

ROOT = Path(__file__).resolve().parents[1]
H100 = ROOT / "docs/results/gpu-h100/capacity"
H100_ARMS = ("tuned", "baseline")  # capacity-ARM folders
H200 = ROOT / "docs/results/gpu-h200"
H200_TUNE = H200 / "tune-capacity"
CPU = ROOT / "docs/results/cpu-testbed"
GPU_BLOCK, CPU_BLOCK = 16, 128  # the profiles' block sizes (gpu-llama, tiny-cpu)
# the gpu-h200/agents README: this file was run on agent-admission alone
H200_AGENTS_ALONE = {"agents-coding-agent-with-batch.json.gz": "agent-admission"}
# the CPU capacity cliff's --set (its capacity.json's engine_sets) and the tiny-cpu agent
# profile's step (the gauges runs, README: --set max-num-seqs=2)
CPU_CLIFF_BUDGET, CPU_AGENT_BUDGET = 512, 2048
# the cliff's max-num-seqs where its verdict record names none (cpu-testbed/capacity/README)
CPU_CLIFF_SEQS = 16
# a run file inside a tune tarball: tune/capacity (or the earlier tune's sweep) and the A/B
_TUNE_RUN = r"tune/(?:{runs}/(.+)-agents-\d+|ab-agents/(.+)-rep\d)\.json$"


@dataclass(frozen=True)
class CommittedRun:
    """One committed agents run: where it ran, the arm (profile) it ran, its file's name (in a
    tarball, less the top folder), its parsed results, and the pool (None: not recorded) and
    knobs it ran under."""

    card: str  # "H100", "H200", "CPU"
    arm: str
    name: str
    data: dict[str, Any]
    knobs: Knobs
    pool: Pool | None


def read_results(path: Path) -> dict[str, Any]:
    """A results file, gzipped or not."""
    raw = path.read_bytes()
    return json.loads(gzip.decompress(raw) if path.suffix == ".gz" else raw)


def _verdict(data: dict[str, Any]) -> dict[str, Any]:
    return next((s for s in data["samples"] if s["kind"] == "capacity"), {})


def _args_knobs(args: dict[str, Any]) -> Knobs:
    return Knobs(args.get("max-num-seqs"), args.get("max-num-batched-tokens"),
                 args.get("long-prefill-token-threshold"))


def h100_runs() -> Iterator[CommittedRun]:
    for arm in H100_ARMS:
        for path in sorted((H100 / f"capacity-{arm}").glob("*-agents-*.json.gz")):
            data = read_results(path)
            v = _verdict(data)
            yield CommittedRun(
                "H100", arm, path.name, data,
                Knobs(v["max_num_seqs"], v["step_budget"], v["long_prefill_threshold"]),
                Pool(v["pool_tokens"], GPU_BLOCK, "the run's verdict"))


def h200_tune_arms() -> dict[str, tuple[Pool, Knobs]]:
    """Each arm of the H200 tune sitting: its pool and knobs, as verdicts.txt heads it."""
    return {m[1]: (Pool(int(m[2]), GPU_BLOCK, "verdicts.txt"),
                   Knobs(int(m[5]), int(m[3]), int(m[4]) or None))
            for m in re.finditer(
                r"## (\S+) \(pool (\d+), chunk (\d+), threshold (\d+), max-num-seqs (\d+)",
                (H200_TUNE / "verdicts.txt").read_text())}


def h200_tune_runs() -> Iterator[CommittedRun]:
    arms = h200_tune_arms()
    with tarfile.open(H200_TUNE / "tune-results.tar.gz") as tar:
        for member in sorted(tar.getmembers(), key=lambda m: m.name):
            found = re.match(_TUNE_RUN.format(runs="capacity"), member.name)
            handle = tar.extractfile(member) if found else None
            if found is None or handle is None:
                continue
            pool, knobs = arms[found[1] or found[2]]
            yield CommittedRun("H200", found[1] or found[2], member.name.split("/", 1)[1],
                               json.load(handle), knobs, pool)


def h200_early_runs() -> Iterator[CommittedRun]:
    with tarfile.open(H200 / "tune/tune-results.tar.gz") as tar:
        files = {m.name: tar.extractfile(m) for m in tar.getmembers() if m.isfile()}
        ab = json.load(files["tune/ab-agents.json"])  # type: ignore[arg-type]
        args = {s["profile"]: s["engine_args"] for s in ab["samples"]}
        for name in sorted(files):
            found = re.match(_TUNE_RUN.format(runs="sweep"), name)
            handle = files[name]
            if found is None or handle is None:
                continue
            arm = found[1] or found[2]
            yield CommittedRun("H200", f"{arm} (12-02)", name.split("/", 1)[1],
                               json.load(handle), _args_knobs(args[arm]), None)
    ab = read_results(H200 / "agents/ab-agents.json.gz")
    args = {s["profile"]: s["engine_args"] for s in ab["samples"]}
    for path in sorted((H200 / "agents").glob("*.json.gz")):
        arm = H200_AGENTS_ALONE.get(path.name) or path.name.rsplit("-rep", 1)[0]
        if arm in args:
            yield CommittedRun("H200", f"{arm} (12-01)", path.name, read_results(path),
                               _args_knobs(args[arm]), None)


def cpu_runs() -> Iterator[CommittedRun]:
    for folder in sorted((CPU / "capacity").iterdir()):
        gauges = folder.name == "gauges"
        budget = CPU_AGENT_BUDGET if gauges else CPU_CLIFF_BUDGET
        for path in sorted(folder.glob("*-agents-*.json.gz")):
            data = read_results(path)
            v = _verdict(data)
            seqs = v.get("max_num_seqs") or (None if gauges else CPU_CLIFF_SEQS)
            pool = (Pool(v["pool_tokens"], CPU_BLOCK, "the run's verdict")
                    if v.get("pool_tokens") else None)
            yield CommittedRun("CPU", folder.name, path.name, data, Knobs(seqs, budget, None),
                               pool)


def all_runs() -> Iterator[CommittedRun]:
    """Every committed agents run, each once, sitting by sitting (the module's order)."""
    yield from h100_runs()
    yield from h200_tune_runs()
    yield from h200_early_runs()
    yield from cpu_runs()
