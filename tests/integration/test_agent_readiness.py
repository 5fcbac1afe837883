"""An agent profile that cannot take a tool call is not ready: the serve fails, naming the
fix, instead of reporting ready. Its boot (`toolless_boot`, tests/integration/conftest.py) is
its own, since the session engine must take tool calls; test_memory_cpu_pool reads the same
boot's KV pool."""

from __future__ import annotations

import json

import pytest
from support import FailedBoot

from sm121.hosts.processes import group_alive

pytestmark = pytest.mark.integration


def test_agent_profile_without_tool_calling_fails_readiness_with_the_fix(
        toolless_boot: FailedBoot) -> None:
    result = toolless_boot.result
    assert result.returncode == 2, result.stdout + result.stderr
    assert "refuses tool calls" in result.stderr
    assert "tool-call-parser" in result.stderr and "enable-auto-tool-choice" in result.stderr
    assert toolless_boot.run_dir.name.startswith("tiny-cpu-agent-")
    run = json.loads((toolless_boot.run_dir / "run.json").read_text())
    assert run["status"] == "failed" and "tool" in run["failure"]
    assert not group_alive(run["nodes"][0]["pgid"])
