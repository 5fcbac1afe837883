"""The architecture tests read the import graph through `scripts/look.py`, the same script a
developer runs, so the test and the report cannot disagree."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

PROJECT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def look() -> ModuleType:
    spec = importlib.util.spec_from_file_location("look", PROJECT / "scripts" / "look.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["look"] = module  # dataclasses resolve their module by name
    spec.loader.exec_module(module)
    return module
