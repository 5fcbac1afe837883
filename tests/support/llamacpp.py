"""The llama-server binary the tests use: the one `make setup` builds (scripts/llamacpp-build.sh),
linked beside this Python, else in the repo's cache, else on PATH."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def llama_server() -> str:
    beside = Path(sys.executable).parent / "llama-server"
    if beside.exists():
        return str(beside)
    cached = sorted(ROOT.glob(".cache/llama.cpp/b*/bin/llama-server"))
    if cached:
        return str(cached[-1])
    found = shutil.which("llama-server")
    if found:
        return found
    if os.environ.get("SM121_SKIP_LLAMACPP"):
        pytest.skip("SM121_SKIP_LLAMACPP is set: no llama-server was built")
    raise AssertionError("no llama-server: run `make setup` (scripts/llamacpp-build.sh builds it)")


def put_on_path() -> Path:
    """The binary's folder first on PATH (sm121 starts `llama-server` by name); its path."""
    binary = Path(llama_server())
    os.environ["PATH"] = f"{binary.parent}{os.pathsep}{os.environ['PATH']}"
    return binary
