"""One copy of a model folder from a sending node to a receiving node: the rsync or tar | ssh
command it runs on the sender (rendered here, quoted), and the bytes it sent, read from
rsync's --stats or tar's --totals."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Literal

from sm121.stage.files import PARTIAL_DIR

Method = Literal["rsync", "tar"]


@dataclass(frozen=True)
class Endpoint:
    """A folder on a node: where a copy is read from or written to."""

    name: str
    folder: str
    address: str | None  # user@host others reach it at; None: this machine
    local: bool


def rsync_script(src: Endpoint, dest: Endpoint, hop: list[str]) -> str:
    """rsync on the sender. --partial-dir keeps an interrupted file so a rerun sends only the
    rest of it (rsync's delta against the partial file); -L copies a snapshot's symlinked blobs
    as files; --protect-args keeps the remote path away from the remote shell."""
    argv = ["rsync", "-a", "-L", "--partial", f"--partial-dir={PARTIAL_DIR}", "--protect-args",
            "--stats", f"--exclude=/{PARTIAL_DIR}"]
    target = dest.folder.rstrip("/") + "/"
    if not same_host(src, dest):
        argv += ["-e", shlex.join(hop)]
        target = f"{dest.address}:{target}"
    return shlex.join([*argv, "--", src.folder.rstrip("/") + "/", target])


def tar_script(src: Endpoint, dest: Endpoint, names: list[str], hop: list[str]) -> str:
    """tar streamed into ssh (no temp file on either side), for nodes without rsync. It resumes
    by file: the rerun sends the files that are missing or differ in size."""
    create = shlex.join(["tar", "-c", "-h", "--totals", "-f", "-", "-C", src.folder, "--",
                         *names])
    extract = ["sh", "-c", 'mkdir -p "$1" && exec tar -x -f - -C "$1"', "untar", dest.folder]
    if same_host(src, dest):
        return f"{create} | {shlex.join(extract)}"
    assert dest.address is not None
    return f"{create} | {shlex.join([*hop, '--', dest.address, shlex.join(extract)])}"


def same_host(src: Endpoint, dest: Endpoint) -> bool:
    return src.name == dest.name or (src.local and dest.local)


_RSYNC_SENT = re.compile(r"Total bytes sent:\s*([\d,]+)")
_TAR_SENT = re.compile(r"Total bytes written:\s*(\d+)")


def bytes_sent(method: Method, stdout: str, stderr: str) -> int | None:
    """What the sender put on the wire: rsync's own count (data and protocol), or the size of
    the tar stream."""
    if method == "rsync":
        found = _RSYNC_SENT.search(stdout)
        return int(found.group(1).replace(",", "")) if found else None
    found = _TAR_SENT.search(stderr)
    return int(found.group(1)) if found else None
