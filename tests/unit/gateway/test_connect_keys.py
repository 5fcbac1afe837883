"""`sm121 connect` never leaks the user's own key (issue 42): Claude Code's settings.json env
overrides the shell, so an ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN or apiKeyHelper left in it
went to the endpoint sm121 pointed the agent at. `--write` removes them (a backup kept) and
the printed forms refuse while they are there; the merged JSON is read back, and a number
json cannot write back (1e999) is refused. Through the real CLI against a real gateway with
a fake engine behind it, HOME in a temporary folder.

Failed on main: the first three (the keys stayed, the shell form printed, 1e999 was written
back as Infinity)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from fake_protocol_engine import FakeProtocolEngine
from gateway_harness import running_gateway
from support import invoke_cli

KEY = "connect-keys-sm121-5d1e"
REAL = "sk-ant-real-user-key-8b3f"
HELPER = "~/bin/print-my-anthropic-key"


@pytest.fixture
async def engine() -> AsyncIterator[FakeProtocolEngine]:
    fake = await FakeProtocolEngine(model="coder").start()
    yield fake
    await fake.stop()


@pytest.fixture
def settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("SM121_API_KEY", KEY)
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text(json.dumps({
        "apiKeyHelper": HELPER, "theme": "dark",
        "env": {"ANTHROPIC_API_KEY": REAL, "ANTHROPIC_AUTH_TOKEN": REAL, "MY_VAR": "1"}}))
    return path


async def _connect(url: str, *extra: str) -> Any:
    return await asyncio.to_thread(invoke_cli, "connect", url, "--agent", "claude-code",
                                   *extra, check=False)


async def test_write_removes_the_users_anthropic_credentials(engine: FakeProtocolEngine,
                                                             settings: Path) -> None:
    async with running_gateway(engine.url, api_keys=(KEY,)) as gw:
        result = await _connect(gw.url, "--write")
    assert result.returncode == 0, result.stderr
    text = settings.read_text()
    after = json.loads(text)  # read back: valid JSON
    assert REAL not in text and HELPER not in text and KEY not in text
    assert "apiKeyHelper" not in after
    assert "ANTHROPIC_API_KEY" not in after["env"] and "ANTHROPIC_AUTH_TOKEN" not in after["env"]
    assert after["env"]["MY_VAR"] == "1" and after["theme"] == "dark"
    assert after["env"]["ANTHROPIC_BASE_URL"] == gw.url
    for name in ("env.ANTHROPIC_API_KEY", "env.ANTHROPIC_AUTH_TOKEN", "apiKeyHelper"):
        assert f"removed {name}" in result.stdout
    assert REAL not in result.stdout and HELPER not in result.stdout  # named, never shown
    [backup] = settings.parent.glob("settings.json.sm121-backup-*")
    assert json.loads(backup.read_text())["apiKeyHelper"] == HELPER
    # Without keys on the gateway, sm121's placeholder token overrides any the file held.
    settings.write_text(json.dumps({"env": {"ANTHROPIC_AUTH_TOKEN": REAL}}))
    async with running_gateway(engine.url) as open_gw:
        assert (await _connect(open_gw.url, "--write")).returncode == 0
    assert REAL not in settings.read_text()


@pytest.mark.parametrize("form", [["--shell"], [], ["--json"]])
async def test_printed_forms_refuse_while_the_file_holds_a_key(engine: FakeProtocolEngine,
                                                               settings: Path,
                                                               form: list[str]) -> None:
    async with running_gateway(engine.url, api_keys=(KEY,)) as gw:
        refused = await _connect(gw.url, *form)
        settings.write_text(json.dumps({"env": {"MY_VAR": "1"}}))
        printed = await _connect(gw.url, *form)
    assert refused.returncode == 2 and refused.stdout.count("export") == 0
    said = " ".join((refused.stderr + refused.stdout).split())
    for name in ("env.ANTHROPIC_API_KEY", "env.ANTHROPIC_AUTH_TOKEN", "apiKeyHelper", "--write"):
        assert name in said
    assert REAL not in said and HELPER not in said
    assert printed.returncode == 0 and "ANTHROPIC_BASE_URL" in printed.stdout


@pytest.mark.parametrize("number", ["1e999", "-1e999", "NaN", "Infinity"])
async def test_a_number_json_cannot_write_back_is_refused(engine: FakeProtocolEngine,
                                                          settings: Path, number: str) -> None:
    before = '{"cleanupPeriodDays": ' + number + ', "env": {}}'
    settings.write_text(before)
    async with running_gateway(engine.url) as gw:
        result = await _connect(gw.url, "--write")
    assert result.returncode == 2 and "not plain JSON" in result.stderr
    assert settings.read_text() == before
    assert not list(settings.parent.glob("settings.json.sm121-backup-*"))
