"""An agent profile that cannot take a tool call is not ready: the serve fails, naming the
fix, instead of reporting ready (one extra engine boot)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support import free_port, run_cli

from sm121.launch.processes import group_alive

pytestmark = pytest.mark.integration


def test_agent_profile_without_tool_calling_fails_readiness_with_the_fix(sm121_home: Path
                                                                         ) -> None:
    result = run_cli("serve", "tiny-cpu", "--profile", "agent", "--port", str(free_port()),
                     "--set", "enable-auto-tool-choice=false", check=False, timeout=900)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "refuses tool calls" in result.stderr
    assert "tool-call-parser" in result.stderr and "enable-auto-tool-choice" in result.stderr
    runs = sorted((sm121_home / "runs").glob("tiny-cpu-agent-*/run.json"),
                  key=lambda p: p.stat().st_mtime)
    run = json.loads(runs[-1].read_text())
    assert run["status"] == "failed" and "tool" in run["failure"]
    assert not group_alive(run["nodes"][0]["pgid"])
