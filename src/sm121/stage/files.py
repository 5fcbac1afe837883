"""The files of a model folder on a node (size and mtime, one `find` over ssh) and their
sha256 (sha256sum on the node, a few files at once; a Hugging Face LFS blob's name is its
sha256 already), parsed here."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass

from sm121 import paths
from sm121.errors import Sm121Error
from sm121.hosts.transport import Transport

PARTIAL_DIR = ".sm121-partial"  # rsync keeps an interrupted file here, to resume from it
SUM_TIMEOUT_S = 6 * 3600  # checksums of a 400 GB model at a few hundred MB/s per file
MISSING = 3  # the exit status of the listing when the folder does not exist

# -L: a Hugging Face snapshot is symlinks into blobs/; the content is what is staged.
_LIST = ('cd "$1" 2>/dev/null || exit 3; '
         f'find -L . -path ./{PARTIAL_DIR} -prune -o -type f -printf "%s %T@ %P\\0"')
_SUMS = 'cd "$1" && tr "\\n" "\\0" | xargs -0 -n 1 -P "$2" sha256sum --'
# A snapshot's symlinks: name and target. A Hugging Face blob of an LFS file is named by the
# sha256 of its content, so those checksums are known without reading the file.
_LINKS = 'cd "$1" 2>/dev/null && find . -type l -printf "%P\\0%l\\0"; true'
_SHA256 = re.compile(r"[0-9a-f]{64}")
# Every file or folder a copy would take (found as the copy finds them, following links:
# rsync -L, tar -h) whose real path is not under the root: a link out of the folder would
# copy whatever it names (~/.ssh/id_ed25519, /etc/shadow) to every node.
_OUTSIDE = (
    'cd "$1" 2>/dev/null || exit 3; root=$(realpath -e -- "$2") || exit 4; '
    f'find -L . -path ./{PARTIAL_DIR} -prune -o -exec sh -c \'root=$1; shift; for f; do '
    't=$(realpath -e -- "$f"); case "$t" in "$root"|"$root"/*) ;; *) '
    'printf "%s\\0%s\\0" "${f#./}" "$t";; esac; done\' outside "$root" {} +')


@dataclass(frozen=True)
class FileEntry:
    size: int
    mtime: float


def list_files(transport: Transport, folder: str) -> dict[str, FileEntry] | None:
    """name -> size and mtime of every file under folder; None when there is no folder."""
    done = transport.run(["sh", "-c", _LIST, "list", folder], timeout=600)
    if done.returncode == MISSING:
        return None
    if not done.ok:
        raise Sm121Error(f"{transport.name}: cannot list {folder}: {done.stderr.strip()[-300:]}",
                         "check that the folder is readable on that node")
    return parse_listing(done.stdout)


def refuse_outside_links(transport: Transport, folder: str, root: str) -> None:
    """Refuse a folder that holds a symlink resolving outside `root` (the folder itself, or
    for a Hugging Face snapshot its repo folder, whose blobs/ its links point into). Links
    that stay inside are copied as the files they name."""
    done = transport.run(["sh", "-c", _OUTSIDE, "outside", folder, root], timeout=600)
    if done.returncode in (MISSING, 4) or not done.ok:
        raise Sm121Error(f"{transport.name}: cannot check the links in {folder}: "
                         f"{done.stderr.strip()[-300:] or 'no such folder'}",
                         "check that the folder exists and is readable on that node")
    fields = done.stdout.split("\0")
    outside = [f"{name} -> {target}" for name, target in zip(fields[0::2], fields[1::2],
                                                             strict=False) if name]
    if outside:
        raise Sm121Error(f"{transport.name}: {folder} reaches {len(outside)} file(s) or "
                         f"folder(s) outside {root} through symlinks: {'; '.join(outside[:3])}",
                         "a model folder is copied as it is: remove those links or replace "
                         "them with the files (sm121 never follows a link out of the folder)")


def parse_listing(text: str) -> dict[str, FileEntry]:
    entries = {}
    for record in text.split("\0"):
        if not record:
            continue
        size, mtime, name = record.split(" ", 2)
        entries[name] = FileEntry(int(size), float(mtime))
    return entries


def checksums(transport: Transport, folder: str, names: list[str],
              parallel: int = 4) -> dict[str, str]:
    """name -> sha256 of the given files under folder, computed on the node itself."""
    if not names:
        return {}
    bad = [n for n in names if "\n" in n or "\\" in n]
    if bad:
        raise Sm121Error(f"{transport.name}: file names with a newline or backslash: {bad[:3]}",
                         "rename them; sm121 stages plain file names")
    done = transport.run(["sh", "-c", _SUMS, "sums", folder, str(parallel)],
                         input="\n".join(names), timeout=SUM_TIMEOUT_S)
    if not done.ok:
        raise Sm121Error(f"{transport.name}: sha256sum failed in {folder}: "
                         f"{done.stderr.strip()[-300:]}", "check that sha256sum (coreutils) is "
                         "installed and the files are readable")
    sums = parse_sums(done.stdout)
    missing = [n for n in names if n not in sums]
    if missing:
        raise Sm121Error(f"{transport.name}: no checksum for {missing[:3]} in {folder}",
                         "the files vanished while being read; run stage again")
    return sums


def blob_sums(transport: Transport, folder: str) -> dict[str, str]:
    """name -> sha256 for the files of a Hugging Face snapshot that link to an LFS blob (the
    blob's name is its sha256, checked by the hub client when it downloaded it)."""
    done = transport.run(["sh", "-c", _LINKS, "links", folder], timeout=600)
    fields = done.stdout.split("\0")
    pairs = zip(fields[0::2], fields[1::2], strict=False)
    return {name: target.rsplit("/", 1)[-1] for name, target in pairs
            if name and _SHA256.fullmatch(target.rsplit("/", 1)[-1])}


def parse_sums(text: str) -> dict[str, str]:
    sums = {}
    for line in text.splitlines():
        digest, sep, name = line.partition("  ")
        if sep and len(digest) == 64:
            sums[name.removeprefix("./")] = digest
    return sums


class SourceSums:
    """The source's checksums, kept on this machine by (node, folder) and each file's size and
    mtime: a source is read for its checksums once, not once per node nor per run."""

    def __init__(self, where: str, folder: str) -> None:
        key = hashlib.sha256(f"{where}\0{folder}".encode()).hexdigest()[:24]
        self.file = paths.home() / "stage" / "sums" / f"{key}.json"

    def get(self, transport: Transport, folder: str,
            files: dict[str, FileEntry]) -> tuple[dict[str, str], int]:
        """name -> sha256 for every file, and how many bytes had to be read for them now."""
        known = self._load()
        named = blob_sums(transport, folder)
        sums: dict[str, str] = {}
        todo = []
        for name, entry in files.items():
            cached = known.get(name)
            if name in named:
                sums[name] = named[name]
            elif cached and cached["size"] == entry.size and cached["mtime"] == entry.mtime:
                sums[name] = str(cached["sha256"])
            else:
                todo.append(name)
        fresh = checksums(transport, folder, todo)
        sums |= fresh
        self._save({name: {"size": files[name].size, "mtime": files[name].mtime,
                           "sha256": sums[name]} for name in files})
        return sums, sum(files[n].size for n in todo)

    def _load(self) -> dict[str, dict[str, object]]:
        try:
            data = json.loads(self.file.read_text())
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _save(self, data: dict[str, dict[str, object]]) -> None:
        self.file.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.file.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1))
        tmp.replace(self.file)
