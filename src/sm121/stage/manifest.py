"""A node's staged manifest, beside its cache (HF_HOME/sm121-stage/REPO@REVISION.json): the
model and revision staged there, its bytes and per-file checksums, and the compile-cache key
and image id staged with it. `plan`, `doctor`, `cluster check` and the stage-check hook read
it; `sm121 stage` writes it after a copy was verified."""

from __future__ import annotations

import json
import time

from pydantic import BaseModel, ValidationError

from sm121.errors import Sm121Error
from sm121.hosts.transport import Transport
from sm121.stage.files import FileEntry
from sm121.stage.layout import MANIFEST_DIR, ModelKey, manifest_path


class StagedFile(BaseModel):
    bytes: int
    sha256: str
    mtime: float  # when it was verified: a file changed since is checked again


class StagedWeights(BaseModel):
    model: str
    repo: str
    revision: str
    folder: str  # the snapshot folder on this node
    bytes: int
    files: dict[str, StagedFile]
    source: str  # node:folder it was copied from
    verified_at: float


class StagedCache(BaseModel):
    folder: str
    key: dict[str, str]  # gpu, engine version, image id
    bytes: int
    source: str
    staged_at: float


class StagedImage(BaseModel):
    image: str
    id: str
    staged_at: float


class NodeManifest(BaseModel):
    weights: StagedWeights | None = None
    cache: StagedCache | None = None
    image: StagedImage | None = None


def read_manifest(transport: Transport, hf_cache: str, key: ModelKey) -> NodeManifest | None:
    """The node's manifest for this model; None when nothing was staged (or it is unreadable,
    which counts as not staged: the next stage writes it again)."""
    path = manifest_path(hf_cache, key)
    done = transport.run(["sh", "-c", 'cat "$1" 2>/dev/null || true', "cat", path], timeout=60)
    if not done.stdout.strip():
        return None
    try:
        return NodeManifest.model_validate(json.loads(done.stdout))
    except (ValueError, ValidationError):
        return None


def write_manifest(transport: Transport, hf_cache: str, key: ModelKey,
                   manifest: NodeManifest) -> None:
    path = manifest_path(hf_cache, key)
    script = 'mkdir -p "${1%/*}" && cat > "$1.tmp" && mv "$1.tmp" "$1"'
    done = transport.run(["sh", "-c", script, "write", path],
                         input=manifest.model_dump_json(indent=1), timeout=60)
    if not done.ok:
        raise Sm121Error(f"{transport.name}: cannot write {path}: {done.stderr.strip()[-200:]}",
                         "check that the node's hf_cache folder is writable")


def update_manifest(transport: Transport, hf_cache: str, key: ModelKey,
                    **entries: StagedWeights | StagedCache | StagedImage) -> None:
    """Record what was staged (weights, cache or image) in the node's manifest, keeping the
    entries it already holds."""
    old = read_manifest(transport, hf_cache, key) or NodeManifest()
    write_manifest(transport, hf_cache, key, old.model_copy(update=entries))


def weights_entry(key: ModelKey, folder: str, files: dict[str, FileEntry],
                  sums: dict[str, str], source: str) -> StagedWeights:
    return StagedWeights(model=key.label, repo=key.repo, revision=key.revision, folder=folder,
                         bytes=sum(f.size for f in files.values()),
                         files={n: StagedFile(bytes=f.size, sha256=sums[n], mtime=f.mtime)
                                for n, f in sorted(files.items())},
                         source=source, verified_at=time.time())


def mismatches(staged: StagedWeights, expected: dict[str, str],
               present: dict[str, FileEntry] | None) -> list[str]:
    """Files whose staged checksum is not the source's, or that changed on disk (size or mtime)
    since they were verified, or are missing: empty when the copy is good."""
    if present is None:
        return sorted(expected)
    bad = []
    for name, digest in expected.items():
        entry, file = staged.files.get(name), present.get(name)
        if entry is None or file is None or entry.sha256 != digest \
                or entry.bytes != file.size or entry.mtime != file.mtime:
            bad.append(name)
    return sorted(bad)


_FIND = ('for f in "$1"/' + MANIFEST_DIR + '/"$2"@*.json; do '
         '[ -f "$f" ] && { cat "$f"; printf "\\0"; }; done; true')


def find_manifest(transport: Transport, hf_cache: str, repo: str,
                  revision: str | None) -> NodeManifest | None:
    """The node's manifest for a model repo: the one at the pinned revision, else the newest
    staged (an HF model staged at `main` is named by the commit main pointed to)."""
    done = transport.run(["sh", "-c", _FIND, "find", hf_cache, repo], timeout=60)
    found = []
    for text in done.stdout.split("\0"):
        try:
            found.append(NodeManifest.model_validate(json.loads(text)))
        except (ValueError, ValidationError):
            continue
    with_weights = [m for m in found if m.weights is not None]
    pinned = [m for m in with_weights if m.weights and m.weights.revision == revision]
    if pinned:
        return pinned[0]
    newest = sorted(with_weights, key=lambda m: m.weights.verified_at if m.weights else 0)
    return newest[-1] if newest else (found[0] if found else None)
