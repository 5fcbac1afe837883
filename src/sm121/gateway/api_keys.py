"""The API keys a gateway accepts: from a file (one per line) and from the environment.

The file must be readable by its owner alone (0600 or stricter): anyone who can read it can
use the gateway as any of its clients, and a key file left 0644 by an editor or `echo >`
would be readable by every account on the node.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from sm121.errors import Sm121Error

KEYS_ENV = "SM121_GATEWAY_API_KEYS"  # comma-separated keys the gateway accepts
UPSTREAM_KEY_ENV = "SM121_UPSTREAM_API_KEY"  # the key the gateway presents to its engines


def load_api_keys(path: Path | None, from_env: str = "") -> tuple[str, ...]:
    """Comma-separated keys from the environment, then the file's lines (blank lines and
    # comments skipped)."""
    keys = [k.strip() for k in from_env.split(",") if k.strip()]
    if path is not None:
        keys += [line.strip() for line in _read_private(path).splitlines()
                 if line.strip() and not line.startswith("#")]
    return tuple(keys)


def _read_private(path: Path) -> str:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as exc:
        raise Sm121Error(f"cannot read the API key file {path}: {exc.strerror}",
                         "give a readable file with one key per line") from exc
    with os.fdopen(fd, "rb") as handle:
        mode = stat.S_IMODE(os.fstat(handle.fileno()).st_mode)
        if mode & 0o077:
            raise Sm121Error(f"the API key file {path} has mode {mode:04o}: others on this "
                             "machine can read the keys",
                             f"chmod 600 {path} (then rotate the keys if others had access)")
        try:
            return handle.read().decode()
        except UnicodeDecodeError as exc:
            raise Sm121Error(f"the API key file {path} is not UTF-8 text",
                             "give a text file with one key per line") from exc
