"""`sm121 stage --what weights` measured on the loopback cluster testbed: a real sshd on
127.0.0.2-5, each "node" its own cache folder. A model (a 2 GB `sm121 model random --shape
llama-1b --shard-size 500MB`) is staged to 2 nodes and to 4 nodes; a copy is killed (SIGKILL
of `sm121 stage`) mid-way and resumed; a shard of a staged node is corrupted (one byte, size
and mtime kept) and caught by `--verify`. Prints one JSON document: per scenario the bytes
each node received, the bytes on the wire, seconds and rates, the head's full copies.

    python -m sm121.cli.main model random $SM121_HOME/models/llama-1b --shape llama-1b \\
        --shard-size 500MB
    python benchmarks/stage_weights.py --model $SM121_HOME/models/llama-1b --work $WORK \\
        > docs/results/cpu-testbed/stage/stage_weights.json

Every node folder is deleted at the end (the copies are the model's size each)."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from support.sshd import Sshd, start_sshd  # noqa: E402

SNAPSHOT = "hub/models--sm121-local--{name}/snapshots/local"


def cluster_file(sshd: Sshd, work: Path, label: str, count: int) -> Path:
    nodes = [{"name": f"spark{i + 1}", "fabric_ip": host,
              "hf_cache": str(work / label / f"node{i + 1}")}
             for i, host in enumerate(sshd.hosts[:count])]
    return sshd.cluster_file(work / f"{label}.yaml", nodes, work / "state")


def stage(recipe: Path, cluster: Path, *extra: str) -> dict[str, Any]:
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "sm121.cli.main", "stage", str(recipe),
                           "--cluster", str(cluster), "--json", "--trust", *extra],
                          capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        raise SystemExit(f"stage failed: {done.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(done.stdout)["weights"]
    result["wall_s"] = round(time.monotonic() - started, 2)
    return result


def summary(result: dict[str, Any]) -> dict[str, Any]:
    nodes = {n["node"]: {k: n[k] for k in ("status", "sender", "method", "bytes_sent",
                                           "seconds", "recopied")}
             | {"MB_per_s": round(n["bytes_sent"] / n["seconds"] / 1e6, 1) if n["seconds"]
                else None} for n in result["nodes"]}
    return {"model_bytes": result["bytes"], "files": result["files"], "seconds": result["seconds"],
            "wall_s": result["wall_s"], "source_read_for_sums": result["source_read_for_sums"],
            "copies_sent": result["copies_sent"], "bytes_sent": result["bytes_sent"],
            "nodes": nodes}


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def copy_processes(marker: str) -> list[str]:
    """rsync, tar or ssh processes still working on this scenario's folders."""
    done = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True)
    return [line.strip() for line in done.stdout.splitlines()[1:]
            if marker in line and "ps -eo" not in line]


def kill_and_resume(sshd: Sshd, recipe: Path, work: Path, name: str,
                    model_bytes: int, via: str) -> dict[str, Any]:
    label = f"resume-{via}"
    cluster = cluster_file(sshd, work, label, 2)
    target = work / label / "node2" / SNAPSHOT.format(name=name)
    process = subprocess.Popen([sys.executable, "-m", "sm121.cli.main", "stage", str(recipe),
                                "--cluster", str(cluster), "--json", "--trust", "--via", via],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        if target.exists() and folder_bytes(target) >= 0.4 * model_bytes:
            break
        time.sleep(0.2)
    process.send_signal(signal.SIGKILL)
    process.wait()
    time.sleep(3)  # the job watchers see the end of their stdin and stop the copies
    left = copy_processes(str(work / label))
    present = folder_bytes(target)
    resumed = stage(recipe, cluster, "--via", via)
    node2 = next(n for n in resumed["nodes"] if n["node"] == "spark2")
    return {"via": via, "killed_at_bytes_present": present, "missing_bytes": model_bytes - present,
            "processes_left_after_kill": left, "resumed": summary(resumed),
            "resumed_node_bytes_sent": node2["bytes_sent"]}


def corrupt_one_shard(folder: Path) -> str:
    shard = sorted(folder.glob("*.safetensors"))[0]
    info = shard.stat()
    with open(shard, "r+b") as handle:
        handle.seek(info.st_size // 2)
        byte = handle.read(1)
        handle.seek(info.st_size // 2)
        handle.write(bytes([byte[0] ^ 0xFF]))
    os.utime(shard, ns=(info.st_atime_ns, info.st_mtime_ns))
    return shard.name


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument("--work", type=Path, required=True)
    args = parser.parse_args()
    model = args.model.resolve()
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    recipe = work / "recipe.yaml"
    recipe.write_text(json.dumps({"name": "stage-bench", "model": {
        "id": model.name, "source": "path", "path": str(model)}}))
    model_bytes = folder_bytes(model)
    sshd = start_sshd(work / "sshd", nodes=4)
    report: dict[str, Any] = {"model": str(model.name), "model_bytes": model_bytes,
                              "rsync": shutil.which("rsync") is not None}
    try:
        two = cluster_file(sshd, work, "two", 2)
        report["two_nodes"] = summary(stage(recipe, two))
        report["two_nodes_rerun"] = summary(stage(recipe, two))
        node2 = work / "two" / "node2" / SNAPSHOT.format(name=model.name)
        report["corrupted_shard"] = corrupt_one_shard(node2)
        report["rerun_without_verify"] = summary(stage(recipe, two))
        report["rerun_with_verify"] = summary(stage(recipe, two, "--verify"))
        shutil.rmtree(work / "two")
        four = cluster_file(sshd, work, "four", 4)
        report["four_nodes"] = summary(stage(recipe, four))
        shutil.rmtree(work / "four")
        vias = ["rsync", "tar"] if report["rsync"] else ["tar"]
        report["kill_and_resume"] = []
        for via in vias:
            report["kill_and_resume"].append(kill_and_resume(sshd, recipe, work, model.name,
                                                             model_bytes, via))
            shutil.rmtree(work / f"resume-{via}")
    finally:
        sshd.stop()
        for label in ("two", "four", "resume-rsync", "resume-tar"):
            shutil.rmtree(work / label, ignore_errors=True)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
