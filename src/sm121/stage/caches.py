"""Stage the engine's compile and JIT caches from a node that booted warm to the others.

A cache is only valid for the GPU, engine version and image it was built with, so each node's
key (measured on the node: GPU name, the engine's version, the image id) is compared with the
warm node's and a mismatch is never copied. The key is recorded in a manifest beside the
cache (COMPILE_CACHE/sm121-cache.json) on the warm node and on every node that received it."""

from __future__ import annotations

import json
import sys
import time
from typing import Literal

from pydantic import BaseModel

from sm121.cluster.spec import Cluster
from sm121.errors import Sm121Error
from sm121.hosts.parallel import in_parallel
from sm121.recipes.schema import Recipe
from sm121.safe_paths import under_root
from sm121.stage.fanout import fan_out
from sm121.stage.files import list_files, refuse_outside_links
from sm121.stage.images import image_id
from sm121.stage.job import Job
from sm121.stage.layout import ModelKey
from sm121.stage.manifest import StagedCache, update_manifest
from sm121.stage.nodes import StageNode, hop_ssh
from sm121.stage.tools import copy_method, node_tools
from sm121.stage.transfer import Endpoint, bytes_sent, rsync_script, same_host, tar_script

CACHE_MANIFEST = "sm121-cache.json"
COPY_TIMEOUT_S = 6 * 3600
_GPU = ('n=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1); '
        'if [ -n "$n" ]; then echo "$n"; else '
        'echo "cpu $(grep -m 1 "model name" /proc/cpuinfo | cut -d: -f2 | sed "s/^ *//")"; fi')


class CacheKey(BaseModel):
    gpu: str
    engine: str
    image: str  # the image id, or `native`


class CacheOutcome(BaseModel):
    node: str
    status: Literal["staged", "source", "mismatch", "failed"]
    key: CacheKey | None = None
    sender: str | None = None
    method: str | None = None
    files: int = 0
    bytes: int = 0
    bytes_sent: int = 0
    seconds: float = 0.0
    error: str = ""


class CacheResult(BaseModel):
    source: str
    folder: str
    key: CacheKey
    nodes: list[CacheOutcome]


def cache_key(node: StageNode, recipe: Recipe) -> CacheKey:
    gpu = node.transport.run(["sh", "-c", _GPU], timeout=60).stdout.strip() or "unknown"
    runtime = recipe.runtime
    if runtime.kind == "docker" and runtime.image:
        found = image_id(node.transport, runtime.image)
        return CacheKey(gpu=gpu, engine=recipe.engine.version or "in the image",
                        image=found or "missing")
    return CacheKey(gpu=gpu, engine=_engine_version(node, recipe), image="native")


def _engine_version(node: StageNode, recipe: Recipe) -> str:
    """The version of the engine the node's interpreter imports (the engine the cache was
    built by), else the recipe's declared version."""
    python = (node.spec.python if node.spec and node.spec.python else None) or \
        ("python3" if not node.local else _local_python())
    module = recipe.engine.kind.value.replace(".", "_")
    done = node.transport.run([python, "-c", f"import {module}; print({module}.__version__)"],
                              timeout=120)
    version = done.stdout.strip().splitlines()[-1] if done.ok and done.stdout.strip() else ""
    return f"{module} {version}" if version else (recipe.engine.version or "unknown")


def _local_python() -> str:
    return sys.executable


def stage_cache(recipe: Recipe, cluster: Cluster, nodes: list[StageNode], source: str | None,
                key: ModelKey, method: str = "auto") -> CacheResult:
    by_name = {n.name: n for n in nodes}
    warm_name = source or cluster.head
    if warm_name not in by_name:
        raise Sm121Error(f"--from {warm_name}: caches are staged from a node of the cluster",
                         f"nodes: {', '.join(by_name)}")
    warm = by_name[warm_name]
    files = list_files(warm.transport, warm.compile_cache)
    if files:
        refuse_outside_links(warm.transport, warm.compile_cache, warm.compile_cache)
    payload = {n: f for n, f in (files or {}).items() if n != CACHE_MANIFEST}
    if not payload:
        raise Sm121Error(f"{warm_name}: no compile cache in {warm.compile_cache}",
                         "boot the recipe once on that node (sm121 serve), then stage its cache")
    keys = dict(zip(by_name, in_parallel(nodes, lambda n: cache_key(n, recipe)), strict=True))
    wanted = keys[warm_name]
    size = sum(f.size for f in payload.values())
    _write_cache_manifest(warm, wanted, size, f"{warm_name} (booted warm)")
    outcomes = {warm_name: CacheOutcome(node=warm_name, status="source", key=wanted,
                                        files=len(payload), bytes=size)}
    for name, found in keys.items():
        if name != warm_name and found != wanted:
            differs = [f"{field} {getattr(found, field)!r} (warm node: {getattr(wanted, field)!r})"
                       for field in ("gpu", "engine", "image")
                       if getattr(found, field) != getattr(wanted, field)]
            outcomes[name] = CacheOutcome(node=name, status="mismatch", key=found,
                                          error="not copied: " + "; ".join(differs))
    targets = [n for n in by_name if n not in outcomes]
    tools = dict(zip(by_name, in_parallel(nodes, lambda n: node_tools(n.transport)), strict=True))

    def send(sender: str, target: str) -> None:
        src, dest = by_name[sender], by_name[target]
        src_end = Endpoint(sender, src.compile_cache, src.address, src.local)
        dest_end = Endpoint(target, dest.compile_cache, dest.address, dest.local)
        if not same_host(src_end, dest_end) and dest.address is None:
            raise Sm121Error(f"{target}: no fabric_ip in the cluster file",
                             "set fabric_ip for this node, or pass --link mgmt")
        how = copy_method(tools[sender], tools[target], method)
        if how == "missing":
            raise Sm121Error(f"--via rsync, but rsync is missing on {sender} or {target}",
                             "install rsync on both, or leave --via at auto")
        started = time.monotonic()
        dest.transport.run(["mkdir", "-p", "--", dest.compile_cache], timeout=60)
        hop = hop_ssh(cluster)
        script = (rsync_script(src_end, dest_end, hop) if how == "rsync"
                  else tar_script(src_end, dest_end, sorted(payload), hop))
        done = Job(src.transport, script).wait(timeout=COPY_TIMEOUT_S)
        if not done.ok:
            raise Sm121Error(f"{sender} -> {target}: {how} failed: {done.stderr.strip()[-300:]}",
                             "check ssh between the nodes and the disk space")
        present = list_files(dest.transport, dest.compile_cache) or {}
        short = [n for n, f in payload.items() if n not in present or present[n].size != f.size]
        if short:
            raise Sm121Error(f"{target}: {len(short)} cache file(s) did not arrive whole: "
                             f"{', '.join(short[:3])}", "run stage --what cache again")
        _write_cache_manifest(dest, wanted, size, f"{sender}:{src.compile_cache}")
        _record(dest, key, wanted, size, sender)
        outcomes[target] = CacheOutcome(
            node=target, status="staged", key=wanted, sender=sender, method=how,
            files=len(payload), bytes=size,
            bytes_sent=bytes_sent("rsync" if how == "rsync" else "tar", done.stdout,
                                  done.stderr) or 0,
            seconds=round(time.monotonic() - started, 2))

    for copy in fan_out(warm_name, targets, send):
        if not copy.ok:
            outcomes[copy.target] = CacheOutcome(node=copy.target, status="failed",
                                                 key=keys[copy.target], sender=copy.sender,
                                                 error=copy.error)
    return CacheResult(source=warm_name, folder=warm.compile_cache, key=wanted,
                       nodes=[outcomes[n] for n in by_name])


def _write_cache_manifest(node: StageNode, key: CacheKey, size: int, source: str) -> None:
    path = under_root(node.compile_cache, CACHE_MANIFEST)
    body = json.dumps({"key": key.model_dump(), "bytes": size, "source": source,
                       "written_at": time.time()}, indent=1)
    script = 'mkdir -p "${1%/*}" && cat > "$1.tmp" && mv "$1.tmp" "$1"'
    node.transport.run(["sh", "-c", script, "write", path], input=body, timeout=60)


def _record(node: StageNode, key: ModelKey, cache: CacheKey, size: int, sender: str) -> None:
    entry = StagedCache(folder=node.compile_cache, key=cache.model_dump(), bytes=size,
                        source=sender, staged_at=time.time())
    update_manifest(node.transport, node.hf_cache, key, cache=entry)
