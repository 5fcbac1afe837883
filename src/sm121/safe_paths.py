"""Paths built from stranger data stay under their root. A destination sm121 writes to (a
staged snapshot, a ref, a manifest, a compile cache, a run folder) is built here from its root
and its parts, normalised and checked before anything is written; a folder named by a cluster
file (a node's home, caches, state_dir) is checked at load. Pure: no I/O."""

from __future__ import annotations

import posixpath

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
