"""Stage a recipe's weights onto every node: list and checksum the source once, copy to the
nodes that lack a verified copy (in parallel, as a tree), verify each copy file by file
(size and sha256), copy again what fails, and write each node's manifest."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel

from sm121.cluster.spec import Cluster
from sm121.errors import Sm121Error
from sm121.hosts.parallel import in_parallel
from sm121.recipes.schema import Recipe
from sm121.stage import manifest as mf
from sm121.stage.fanout import fan_out
from sm121.stage.files import (
    PARTIAL_DIR,
    FileEntry,
    SourceSums,
    checksums,
    list_files,
    refuse_outside_links,
)
from sm121.stage.job import Job
from sm121.stage.layout import ref_file, snapshot_folder
from sm121.stage.nodes import Link, StageNode, hop_ssh
from sm121.stage.progress import ProgressBoard, Snapshot
from sm121.stage.source import Source, resolve_source
from sm121.stage.tools import copy_method, node_tools
from sm121.stage.transfer import Endpoint, bytes_sent, rsync_script, same_host, tar_script

COPY_TIMEOUT_S = 24 * 3600


@dataclass(frozen=True)
class WeightsRequest:
    recipe: Recipe
    cluster: Cluster
    source: str | None = None  # a node name, or a folder on this machine
    link: Link = "fabric"
    method: Literal["auto", "rsync", "tar"] = "auto"
    verify: bool = False  # checksum every staged file again, not only the changed ones


class NodeOutcome(BaseModel):
    node: str
    status: Literal["staged", "already", "failed"]
    folder: str
    sender: str | None = None
    method: str | None = None
    bytes_sent: int = 0
    seconds: float = 0.0
    recopied: list[str] = []  # files a checksum caught, copied again
    error: str = ""


class WeightsResult(BaseModel):
    model: str
    revision: str
    source: str
    files: int
    bytes: int
    source_read_for_sums: int  # bytes of the source read for checksums in this run
    nodes: list[NodeOutcome]
    copies_sent: dict[str, int]  # full copies each node sent to another node
    bytes_sent: dict[str, int]  # bytes each sender put on the wire to other nodes
    seconds: float

    @property
    def ok(self) -> bool:
        return all(n.status != "failed" for n in self.nodes)


@dataclass
class _Stage:
    request: WeightsRequest
    source: Source
    files: dict[str, FileEntry]
    sums: dict[str, str]
    nodes: dict[str, StageNode]
    tools: dict[str, set[str]]
    board: ProgressBoard
    outcomes: dict[str, NodeOutcome]


def stage_weights(request: WeightsRequest, nodes: list[StageNode],
                  report: Callable[[Snapshot], None] = lambda s: None) -> WeightsResult:
    started = time.monotonic()
    source = resolve_source(request.recipe, request.cluster, nodes, request.source)
    refuse_outside_links(source.transport, source.folder, source.links_within)
    files = list_files(source.transport, source.folder)
    if not files:
        raise Sm121Error(f"{source.name}: no files in {source.folder}",
                         "check the recipe's model location on the source")
    sums, read = SourceSums(source.name, source.folder).get(source.transport, source.folder,
                                                            files)
    total = sum(f.size for f in files.values())
    senders = [source.transport] + [n.transport for n in nodes]
    found = in_parallel(senders, node_tools)
    tools = {source.name: found[0]} | {n.name: t for n, t in zip(nodes, found[1:], strict=True)}
    stage = _Stage(request, source, files, sums, {n.name: n for n in nodes}, tools,
                   ProgressBoard(0, report), {})
    for outcome in in_parallel(nodes, lambda n: _already(stage, n)):
        stage.outcomes[outcome.node] = outcome
    targets = [n.name for n in nodes if stage.outcomes[n.name].status != "already"]
    ready = [n.name for n in nodes if n.name not in targets and n.name != source.name]
    stage.board = ProgressBoard(total * len(targets), report)
    with stage.board:
        copies = fan_out(source.name, targets, lambda s, t: _send(stage, s, t), ready=ready)
    for copy in copies:
        if not copy.ok:
            outcome = stage.outcomes[copy.target]
            stage.outcomes[copy.target] = outcome.model_copy(update={
                "status": "failed", "sender": copy.sender, "error": copy.error})
    outcomes = [stage.outcomes[n.name] for n in nodes]
    sent_copies: dict[str, int] = {}
    sent_bytes: dict[str, int] = {}
    for o in outcomes:  # over the network: a node's copy onto its own disk is not counted
        if o.sender is not None and o.status == "staged" and o.sender != o.node:
            sent_bytes[o.sender] = sent_bytes.get(o.sender, 0) + o.bytes_sent
            sent_copies[o.sender] = sent_copies.get(o.sender, 0) + 1
    return WeightsResult(model=source.key.label, revision=source.key.revision,
                         source=f"{source.name}:{source.folder}", files=len(files), bytes=total,
                         source_read_for_sums=read, nodes=outcomes, copies_sent=sent_copies,
                         bytes_sent=sent_bytes, seconds=round(time.monotonic() - started, 2))


def _already(stage: _Stage, node: StageNode) -> NodeOutcome:
    """`already` when the node's manifest holds the source's checksums for files unchanged
    since they were verified (with --verify: checksummed again now)."""
    folder = snapshot_folder(node.hf_cache, stage.source.key)
    pending = NodeOutcome(node=node.name, status="staged", folder=folder)
    manifest = mf.read_manifest(node.transport, node.hf_cache, stage.source.key)
    if manifest is None or manifest.weights is None:
        return pending
    present = list_files(node.transport, folder)
    if mf.mismatches(manifest.weights, stage.sums, present):  # a missing folder: all
        return pending
    if stage.request.verify:
        now = checksums(node.transport, folder, sorted(stage.files))
        if any(now[n] != stage.sums[n] for n in stage.files):
            return pending
    return NodeOutcome(node=node.name, status="already", folder=folder)


def _sender(stage: _Stage, name: str) -> Endpoint:
    """The source sends from its folder; a node that received a copy sends from its copy."""
    if name == stage.source.name:
        source = stage.source
        return Endpoint(source.name, source.folder, source.address, source.local)
    return _target(stage, name)


def _target(stage: _Stage, name: str) -> Endpoint:
    node = stage.nodes[name]
    return Endpoint(name, stage.outcomes[name].folder, node.address, node.local)


def _send(stage: _Stage, sender: str, target: str) -> None:
    node = stage.nodes[target]
    src, dest = _sender(stage, sender), _target(stage, target)
    if same_host(src, dest) and src.folder == dest.folder:
        _verify_and_record(stage, node, sender, "none", 0, 0.0, [],
                           list_files(node.transport, dest.folder) or {})
        return
    method = copy_method(stage.tools[sender], stage.tools[target], stage.request.method)
    if method == "missing":
        raise Sm121Error(f"--via rsync, but rsync is missing on {sender} or {target}",
                         "install rsync on both, or leave --via at auto (tar over ssh)")
    if not same_host(src, dest) and dest.address is None:
        raise Sm121Error(f"{target}: no fabric_ip in the cluster file, so a copy to it would "
                         "take the management link",
                         "set fabric_ip for this node, or pass --link mgmt to copy over the "
                         "management link")
    started = time.monotonic()
    made = node.transport.run(["mkdir", "-p", "--", dest.folder], timeout=60)
    if not made.ok:
        raise Sm121Error(f"{target}: cannot create {dest.folder}: {made.stderr.strip()}",
                         "set the node's hf_cache to a writable local folder")
    stage.board.watch_folder(target, sender, node.transport, dest.folder,
                      sum(f.size for f in stage.files.values()))
    sent = _copy(stage, sender, src, dest, method)
    bad, present = _bad_files(stage, node, dest.folder)
    recopied = []
    if bad:
        # Caught by size or checksum: remove the bad copies (and any partial of them) and send
        # them again, once.
        _remove(node, dest.folder, bad)
        sent += _copy(stage, sender, src, dest, method)
        recopied = bad
        still, present = _bad_files(stage, node, dest.folder, only=bad)
        if still:
            raise Sm121Error(f"{target}: {len(still)} file(s) still differ from the source after "
                             f"a second copy: {', '.join(still[:3])}",
                             "check the node's disk (dmesg) and the link, then stage again")
    _verify_and_record(stage, node, sender, method, sent, time.monotonic() - started, recopied,
                       present)


def _copy(stage: _Stage, sender: str, src: Endpoint, dest: Endpoint, method: str) -> int:
    hop = hop_ssh(stage.request.cluster)
    if method == "rsync":
        script = rsync_script(src, dest, hop)
    else:
        present = list_files(stage.nodes[dest.name].transport, dest.folder) or {}
        names = sorted(n for n, f in stage.files.items()
                       if n not in present or present[n].size != f.size)
        if not names:
            return 0
        script = tar_script(src, dest, names, hop)
    sender_transport = (stage.source.transport if sender == stage.source.name
                        else stage.nodes[sender].transport)
    done = Job(sender_transport, script).wait(timeout=COPY_TIMEOUT_S)
    if not done.ok:
        raise Sm121Error(f"{sender} -> {dest.name}: {method} failed (exit {done.returncode}): "
                         f"{done.stderr.strip()[-400:]}",
                         "check that the sending node can ssh to the receiving node's address "
                         "(the cluster's ssh_config there), and the disk space")
    counted = bytes_sent("rsync" if method == "rsync" else "tar", done.stdout, done.stderr)
    return counted or 0


def _bad_files(stage: _Stage, node: StageNode, folder: str, only: list[str] | None = None
               ) -> tuple[list[str], dict[str, FileEntry]]:
    """The files of the copy whose size or sha256 is not the source's, and the listing."""
    present = list_files(node.transport, folder) or {}
    names = sorted(only or stage.files)
    wrong_size = [n for n in names if n not in present or present[n].size != stage.files[n].size]
    to_sum = [n for n in names if n not in wrong_size]
    sums = checksums(node.transport, folder, to_sum)
    return sorted(wrong_size + [n for n in to_sum if sums[n] != stage.sums[n]]), present


def _remove(node: StageNode, folder: str, names: list[str]) -> None:
    script = 'cd "$1" && shift && for f in "$@"; do rm -f -- "$f" "' + PARTIAL_DIR + '/$f"; done'
    node.transport.run(["sh", "-c", script, "rm", folder, *names], timeout=120)


def _verify_and_record(stage: _Stage, node: StageNode, sender: str, method: str, sent: int,
                       seconds: float, recopied: list[str],
                       present: dict[str, FileEntry]) -> None:
    """The copy is good (checked above): its manifest records the source's sums with the
    files' sizes and mtimes as they are now."""
    key = stage.source.key
    folder = stage.outcomes[node.name].folder
    files = {n: present.get(n, f) for n, f in stage.files.items()}
    entry = mf.weights_entry(key, folder, files, stage.sums, f"{stage.source.name}:"
                             f"{stage.source.folder}")
    mf.update_manifest(node.transport, node.hf_cache, key, weights=entry)
    _write_ref(stage, node)
    stage.board.finish(node.name)
    stage.outcomes[node.name] = stage.outcomes[node.name].model_copy(update={
        "sender": sender, "method": method, "bytes_sent": sent, "seconds": round(seconds, 2),
        "recopied": recopied})


def _write_ref(stage: _Stage, node: StageNode) -> None:
    """A Hugging Face model's ref (main, or the recipe's branch) names the staged commit, so
    the engine finds it offline by its id."""
    recipe = stage.request.recipe
    if not recipe.model.hf_id:
        return
    ref = recipe.model.revision or "main"
    if ref == stage.source.key.revision:
        return
    path = ref_file(node.hf_cache, stage.source.key, ref)  # refused unless under refs/
    script = 'mkdir -p "${1%/*}" && printf %s "$2" > "$1"'
    node.transport.run(["sh", "-c", script, "ref", path, stage.source.key.revision],
                       timeout=60)

