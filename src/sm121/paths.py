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
