"""The conditions a tuned value was measured under: the device, the engine version, the date
(what each value's comment in the recipe names)."""

from __future__ import annotations

import contextlib
import json
import os
import platform
import shutil
import subprocess
from datetime import UTC, datetime

from pydantic import JsonValue


def device() -> str:
    """The GPU as nvidia-smi names it, else the CPU (the CPU testbed)."""
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            names = subprocess.run([smi, "--query-gpu=name", "--format=csv,noheader"],
                                   capture_output=True, text=True, timeout=20, check=True
                                   ).stdout.split("\n")
            found = sorted({n.strip() for n in names if n.strip()})
            if found:
                return ", ".join(found)
        except (OSError, subprocess.SubprocessError):
            pass
    return f"CPU {platform.machine()} x{os.cpu_count() or '?'}"


def engine_version(version: JsonValue, engine: str = "vLLM") -> str:
    """The engine (its adapter's label) and the version its server reported (its /version as
    text, JSON text or JSON; llama-server's build)."""
    if isinstance(version, str) and version.startswith("{"):
        with contextlib.suppress(ValueError):
            version = json.loads(version)
    if isinstance(version, dict):
        version = version.get("version")
    return f"{engine} {version}" if version else f"{engine} (version not reported)"


def today() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%d")
