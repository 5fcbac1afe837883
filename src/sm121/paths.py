"""Where sm121 keeps its state: runs, generated models, histories.

Everything lives under one home directory, `$SM121_HOME` or `~/.sm121`, so a test or a user
can move it all with one variable.
"""

from __future__ import annotations

import os
import posixpath
from pathlib import Path


def home() -> Path:
    return Path(os.environ.get("SM121_HOME") or Path.home() / ".sm121").expanduser()


def runs_dir() -> Path:
    return home() / "runs"


def models_dir() -> Path:
    return home() / "models"


def hf_repo_folder(hf_id: str) -> str:
    """The Hugging Face cache's folder name of a model repo: `org/name` -> `models--org--name`
    (under the cache's `hub/`)."""
    return "models--" + hf_id.replace("/", "--")


def expand_sm121_home(path: str) -> str:
    """A recipe path starting `$SM121_HOME/` (e.g. a model `sm121 model random` wrote) lies under
    this launcher's home; any other path is the node's own and stays as written."""
    for prefix in ("$SM121_HOME/", "${SM121_HOME}/"):
        if path.startswith(prefix):
            return str(home() / path[len(prefix):])
    return path


def expand_home(path: str, home: str | None) -> str:
    """`~` and `~/x` in a node's path with that node's home (asked over ssh), never this
    machine's: docker does not expand `~`, and a quoted `~` reaches no shell that would. An
    unknown home (None) leaves the path as it is, to be expanded at launch."""
    if home is None or not (path == "~" or path.startswith("~/")):
        return path
    return home if path == "~" else posixpath.join(home, path[2:])
