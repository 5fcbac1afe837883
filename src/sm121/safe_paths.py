"""Paths built from stranger data stay under their root. A destination sm121 writes to (a
staged snapshot, a ref, a manifest, a compile cache, a run folder) is built here from its root
and its parts, normalised and checked before anything is written; a folder named by a cluster
file (a node's home, caches, state_dir) is checked at load. Pure, but for `file_under`, which
resolves links on this machine."""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

from sm121.display import quoted
from sm121.errors import Sm121Error

FOLDER_RULE = ("an absolute path or one starting with ~/, without '..' segments, control "
               "characters or a leading '-'")


def under_root(root: str, *parts: str) -> str:
    """root/part/... normalised, refused unless it lies strictly inside root: no part may be
    absolute, hold a `..` segment, a control character or be empty."""
    for part in parts:
        if (not part or part.startswith("/") or ".." in part.split("/")
                or any(not c.isprintable() for c in part)):
            raise Sm121Error(f"refused to build a path under {root} from {part!r}: it would "
                             "leave that folder",
                             "names that become folders must be plain words (no '/', '..')")
    normal_root = posixpath.normpath(root)
    path = posixpath.normpath(posixpath.join(normal_root, *parts))
    if not is_under(path, normal_root) or path == normal_root:
        raise Sm121Error(f"refused to write {path}: it is not under {normal_root}",
                         "names that become folders must be plain words (no '/', '..')")
    return path


def is_under(path: str, root: str) -> bool:
    """path (already normalised) is root or lies below it, segment by segment."""
    root = root.rstrip("/") or "/"
    return path == root or path.startswith(root if root == "/" else root + "/")


def check_node_folder(value: str) -> str:
    """A folder a cluster file names on a node (home, hf_cache, compile_cache, state_dir): it
    reaches remote commands (quoted) and rsync's argv, and other paths are built under it."""
    if not (value.startswith("/") or value == "~" or value.startswith("~/")):
        raise ValueError(f"{value!r} is not an allowed folder (allowed: {FOLDER_RULE})")
    if ".." in value.split("/") or any(not c.isprintable() for c in value):
        raise ValueError(f"{value!r} is not an allowed folder (allowed: {FOLDER_RULE})")
    return value


# One file or folder name built from a name sm121 checked (an arm, a profile, an A/B's
# RECIPE:PROFILE) and a number: a single segment, never `/`, never `..` or an option.
SEGMENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,254}")
SEGMENT_RULE = ("letters, digits, '_', '.', ':' and '-', starting with a letter or digit, at "
                "most 255 characters")


def file_under(root: Path, *parts: str) -> Path:
    """root/part/... on this machine, refused unless every part is one plain segment and the
    path, links resolved, stays inside root: the second line under the names' own types, for
    a file named after a stranger's value (a resumed tune's arm) in a folder that may be a
    stranger's too (a linked `capacity/` pointing elsewhere). Returns root/part/... as built
    (not resolved), so the path a results file records reads as before."""
    for part in parts:
        if not SEGMENT.fullmatch(part):
            raise Sm121Error(f"refused to build a path under {quoted(str(root))} from "
                             f"{quoted(part, 120)} (allowed: {SEGMENT_RULE})",
                             "a bug or a tampered file: names that become files are plain "
                             "words")
    path = root.joinpath(*parts)
    top, found = root.resolve(), path.resolve()
    if found == top or not found.is_relative_to(top):
        raise Sm121Error(f"refused to write {quoted(str(path))}: it resolves to "
                         f"{quoted(str(found))}, outside {quoted(str(top))}",
                         "a link in that folder points elsewhere: remove it, or use "
                         "another --out")
    return path
