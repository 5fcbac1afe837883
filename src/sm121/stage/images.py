"""Stage a docker image onto every node: `docker save IMAGE | ssh NODE docker load`, streamed
(no file on either side; dd in the pipe counts the bytes for the progress line), keyed by
image id (a node that has the id is skipped), sent as a
tree like the weights (a node that loaded it serves the next)."""

from __future__ import annotations

import re
import shlex
import time
from collections.abc import Callable
from typing import Literal

from pydantic import BaseModel

from sm121.cluster.spec import Cluster
from sm121.errors import Sm121Error
from sm121.hosts.parallel import in_parallel
from sm121.hosts.transport import Transport
from sm121.stage.fanout import fan_out
from sm121.stage.job import Job
from sm121.stage.layout import ModelKey
from sm121.stage.manifest import StagedImage, update_manifest
from sm121.stage.nodes import StageNode, hop_ssh
from sm121.stage.progress import ProgressBoard, Snapshot

LOAD_TIMEOUT_S = 6 * 3600
_DD_BYTES = re.compile(r"^(\d+) bytes", re.MULTILINE)


class ImageOutcome(BaseModel):
    node: str
    status: Literal["loaded", "already", "failed"]
    id: str
    sender: str | None = None
    bytes_sent: int = 0
    seconds: float = 0.0
    error: str = ""


class ImageResult(BaseModel):
    image: str
    id: str
    source: str
    nodes: list[ImageOutcome]
    copies_sent: dict[str, int]


def image_id(transport: Transport, image: str) -> str | None:
    """The image's id on a node (sha256:...), or None when the node does not have it."""
    done = transport.run(["docker", "image", "inspect", "--format", "{{.Id}}", image],
                         timeout=60)
    text = done.stdout.strip()
    return text if done.ok and text else None


def save_load_script(image: str, address: str | None, hop: list[str]) -> str:
    """docker save on the sender piped into docker load on the receiver; dd in between counts
    the bytes on the wire."""
    load = ["docker", "load"]
    remote = shlex.join(load) if address is None else shlex.join([*hop, "--", address,
                                                                  shlex.join(load)])
    return f"{shlex.join(['docker', 'save', image])} | dd bs=4M status=progress | {remote}"


def streamed_bytes(stderr: str) -> int:
    """The last byte count dd printed (its progress lines end in a carriage return)."""
    counts = [int(m.group(1)) for m in _DD_BYTES.finditer(stderr.replace("\r", "\n"))]
    return counts[-1] if counts else 0


def image_size(transport: Transport, image: str) -> int:
    done = transport.run(["docker", "image", "inspect", "--format", "{{.Size}}", image],
                         timeout=60)
    text = done.stdout.strip()
    return int(text) if done.ok and text.isdigit() else 0


def stage_image(image: str, cluster: Cluster, nodes: list[StageNode], source: str | None,
                key: ModelKey, report: Callable[[Snapshot], None] = lambda s: None
                ) -> ImageResult:
    by_name = {n.name: n for n in nodes}
    sender_name = source or cluster.head
    if sender_name not in by_name:
        raise Sm121Error(f"--from {sender_name}: images are staged from a node of the cluster",
                         f"nodes: {', '.join(by_name)}")
    wanted = image_id(by_name[sender_name].transport, image)
    if wanted is None:
        raise Sm121Error(f"{sender_name}: docker has no image {image}",
                         f"pull or build it there first (docker pull {image})")
    ids = in_parallel(nodes, lambda n: image_id(n.transport, wanted))
    outcomes = {n.name: ImageOutcome(node=n.name, status="already" if found == wanted
                                     else "loaded", id=wanted)
                for n, found in zip(nodes, ids, strict=True)}
    targets = [n for n, o in outcomes.items() if o.status == "loaded"]
    ready = [n for n, o in outcomes.items() if o.status == "already" and n != sender_name]

    def send(sender: str, target: str) -> None:
        node = by_name[target]
        if node.address is None:
            raise Sm121Error(f"{target}: no fabric_ip in the cluster file",
                             "set fabric_ip for this node, or pass --link mgmt")
        started = time.monotonic()
        script = save_load_script(image, node.address, hop_ssh(cluster))
        job = Job(by_name[sender].transport, script)
        board.watch(target, sender, lambda: streamed_bytes(job.stderr_so_far()), size)
        done = job.wait(timeout=LOAD_TIMEOUT_S)
        board.finish(target)
        if not done.ok:
            raise Sm121Error(f"{sender} -> {target}: docker save | load failed: "
                             f"{done.stderr.strip()[-300:]}",
                             "check docker on both nodes and ssh between them")
        if image_id(node.transport, wanted) != wanted:
            raise Sm121Error(f"{target}: docker load finished but {wanted} is not there",
                             "check the node's docker storage (df, docker system df)")
        outcomes[target] = outcomes[target].model_copy(update={
            "sender": sender, "bytes_sent": streamed_bytes(done.stderr),
            "seconds": round(time.monotonic() - started, 2)})
        _record(node, key, image, wanted)

    size = image_size(by_name[sender_name].transport, wanted)
    board = ProgressBoard(size * len(targets), report)
    with board:
        copies = fan_out(sender_name, targets, send, ready=ready)
    for copy in copies:
        if not copy.ok:
            outcomes[copy.target] = outcomes[copy.target].model_copy(update={
                "status": "failed", "sender": copy.sender, "error": copy.error})
    for name, outcome in outcomes.items():
        if outcome.status == "already":
            _record(by_name[name], key, image, wanted)
    sent: dict[str, int] = {}
    for o in outcomes.values():
        if o.status == "loaded" and o.sender:
            sent[o.sender] = sent.get(o.sender, 0) + 1
    return ImageResult(image=image, id=wanted, source=sender_name,
                       nodes=[outcomes[n.name] for n in nodes], copies_sent=sent)


def _record(node: StageNode, key: ModelKey, image: str, wanted: str) -> None:
    entry = StagedImage(image=image, id=wanted, staged_at=time.time())
    update_manifest(node.transport, node.hf_cache, key, image=entry)
