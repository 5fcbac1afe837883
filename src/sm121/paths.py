"""Where sm121 keeps its state: runs, generated models, histories.

Everything lives under one home directory, `$SM121_HOME` or `~/.sm121`, so a test or a user
can move it all with one variable.
"""

from __future__ import annotations

import os
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
