"""`sm121 connect --write` through the real CLI against a real gateway (a recording fake
engine behind it), with HOME in a temporary folder: each agent's config file that already
holds other settings keeps them, gets sm121's keys, and keeps a backup of what it was; the
key never reaches a file; a file sm121 cannot merge safely is left as it was."""

from __future__ import annotations

import asyncio
import json
import tomllib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from fake_protocol_engine import FakeProtocolEngine
from gateway_harness import running_gateway
from support import invoke_cli

KEY = "connect-write-key-91c2"

CODEX_BEFORE = """\
# my codex settings
model = "gpt-5"
model_provider = "openai"
approval_policy = "on-request"

[model_providers.other]
name = "Other"
base_url = "https://other.example/v1"

[model_providers.sm121]
name = "stale"
base_url = "http://127.0.0.1:1/v1"

[model_providers.sm121.http_headers]
X-Old = "1"

[profiles.fast]
model = "gpt-5-mini"

[mcp_servers.docs]
command = "docs-server"
"""


@pytest.fixture
async def engine() -> AsyncIterator[FakeProtocolEngine]:
    fake = await FakeProtocolEngine(model="coder").start()
    yield fake
    await fake.stop()


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("CODEX_HOME", "XDG_CONFIG_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("SM121_API_KEY", KEY)
    return tmp_path


async def _write(url: str, agent: str, *extra: str, check: bool = True) -> Any:
    return await asyncio.to_thread(invoke_cli, "connect", url, "--agent", agent, "--write",
                                   *extra, check=check)


def _backups(path: Path) -> list[Path]:
    return sorted(path.parent.glob(f"{path.name}.sm121-backup-*"))


def _no_key_in(path: Path) -> None:
    text = path.read_text()
    assert KEY not in text and "$SM121_API_KEY" not in text


async def test_claude_code_settings_keep_their_other_keys(engine: FakeProtocolEngine,
                                                          home: Path) -> None:
    path = home / ".claude" / "settings.json"
    path.parent.mkdir()
    before = {"theme": "dark", "permissions": {"allow": ["Bash(ls)"]},
              "env": {"MY_VAR": "1", "ANTHROPIC_MODEL": "claude-x"}}
    path.write_text(json.dumps(before))
    async with running_gateway(engine.url, api_keys=(KEY,)) as gw:
        result = await _write(gw.url, "claude-code")
        again = await _write(gw.url, "claude-code")
    after = json.loads(path.read_text())
    assert after["theme"] == "dark" and after["permissions"] == before["permissions"]
    assert after["env"]["MY_VAR"] == "1" and after["env"]["ANTHROPIC_MODEL"] == "coder"
    assert after["env"]["ANTHROPIC_BASE_URL"] == gw.url
    assert after["env"]["CLAUDE_CODE_AUTO_COMPACT_WINDOW"] == "4096"
    assert "ANTHROPIC_AUTH_TOKEN" not in after["env"]  # keyed: the shell carries it
    _no_key_in(path)
    [backup] = _backups(path)
    assert json.loads(backup.read_text()) == before
    assert "replaced env.ANTHROPIC_MODEL = coder" in result.stdout
    assert "set env.CLAUDE_CODE_MAX_OUTPUT_TOKENS = 1024" in result.stdout
    assert "eval" in result.stdout  # the key and the unset still come from the shell
    assert "unchanged" in again.stdout and len(_backups(path)) == 1


async def test_codex_config_keeps_the_users_default_and_tables(engine: FakeProtocolEngine,
                                                               home: Path) -> None:
    path = home / ".codex" / "config.toml"
    path.parent.mkdir()
    path.write_text(CODEX_BEFORE)
    async with running_gateway(engine.url, api_keys=(KEY,)) as gw:
        result = await _write(gw.url, "codex")
    after = tomllib.loads(path.read_text())
    before = tomllib.loads(CODEX_BEFORE)
    for key in ("model", "model_provider", "approval_policy", "mcp_servers"):
        assert after[key] == before[key]
    assert after["model_providers"]["other"] == before["model_providers"]["other"]
    assert after["profiles"]["fast"] == before["profiles"]["fast"]
    assert after["model_providers"]["sm121"] == {  # the stale table and its sub-table replaced
        "name": "sm121", "base_url": f"{gw.url}/v1", "wire_api": "responses",
        "env_key": "SM121_API_KEY"}
    assert after["profiles"]["sm121"] == {"model": "coder", "model_provider": "sm121"}
    # tomlkit edits in place: every line outside sm121's old tables is still there, in order
    theirs = [line for line in CODEX_BEFORE.splitlines()
              if line and "sm121" not in line and line not in ('name = "stale"', 'X-Old = "1"',
                                                               'base_url = "http://127.0.0.1:1/v1"')]
    lines = path.read_text().splitlines()
    assert [line for line in lines if line in theirs] == theirs
    _no_key_in(path)
    [backup] = _backups(path)
    assert backup.read_text() == CODEX_BEFORE
    assert "codex --profile sm121 -c model_context_window=4096" in result.stdout


async def test_codex_inline_tables_are_merged_inline(engine: FakeProtocolEngine,
                                                     home: Path) -> None:
    path = home / ".codex" / "config.toml"
    path.parent.mkdir()
    inline = ('# inline, as some write it\n'
              'model_providers = { other = { name = "o" }, sm121 = { name = "mine" } }\n')
    path.write_text(inline)
    async with running_gateway(engine.url) as gw:
        await _write(gw.url, "codex")
    text = path.read_text()
    after = tomllib.loads(text)
    assert text.startswith("# inline, as some write it\nmodel_providers = {")  # still inline
    assert after["model_providers"]["other"] == {"name": "o"}
    assert after["model_providers"]["sm121"]["base_url"] == f"{gw.url}/v1"
    assert after["profiles"]["sm121"]["model_provider"] == "sm121"


@pytest.mark.parametrize("kept", [
    'model_providers = "not a table"\n',
    'model_providers.sm121.name = "mine"\nmodel = "x"\n',  # dotted keys: not rewritten exactly
])
async def test_codex_config_that_sm121_cannot_merge_is_left_alone(engine: FakeProtocolEngine,
                                                                  home: Path, kept: str) -> None:
    path = home / ".codex" / "config.toml"
    path.parent.mkdir()
    path.write_text(kept)
    async with running_gateway(engine.url) as gw:
        result = await _write(gw.url, "codex", check=False)
    assert result.returncode == 2 and "nothing was written" in " ".join(result.stderr.split())
    assert path.read_text() == kept and not _backups(path)


async def test_opencode_config_keeps_its_providers_and_default_model(
        engine: FakeProtocolEngine, home: Path) -> None:
    path = home / ".config" / "opencode" / "opencode.json"
    path.parent.mkdir(parents=True)
    before = {"$schema": "https://opencode.ai/config.json", "model": "anthropic/claude-x",
              "provider": {"ollama": {"npm": "@ai-sdk/openai-compatible",
                                      "options": {"baseURL": "http://localhost:11434/v1"}}},
              "theme": "opencode"}
    path.write_text(json.dumps(before, indent=2))
    async with running_gateway(engine.url, api_keys=(KEY,)) as gw:
        result = await _write(gw.url, "opencode")
    after = json.loads(path.read_text())
    assert after["model"] == "anthropic/claude-x" and after["theme"] == "opencode"
    assert after["provider"]["ollama"] == before["provider"]["ollama"]
    sm121 = after["provider"]["sm121"]
    assert sm121["options"] == {"baseURL": f"{gw.url}/v1", "apiKey": "{env:SM121_API_KEY}"}
    assert sm121["models"]["coder"]["limit"] == {"context": 3584, "output": 1024}
    _no_key_in(path)
    assert json.loads(_backups(path)[0].read_text()) == before
    assert "opencode --model sm121/coder" in result.stdout


async def test_opencode_jsonc_is_refused_not_rewritten(engine: FakeProtocolEngine,
                                                      home: Path) -> None:
    path = home / ".config" / "opencode" / "opencode.json"
    path.parent.mkdir(parents=True)
    path.write_text('{\n  // my comment\n  "theme": "x"\n}\n')
    async with running_gateway(engine.url) as gw:
        result = await _write(gw.url, "opencode", check=False)
    assert result.returncode == 2 and "not plain JSON" in result.stderr
    assert "// my comment" in path.read_text() and not _backups(path)


async def test_aider_metadata_keeps_the_other_models(engine: FakeProtocolEngine,
                                                     home: Path) -> None:
    path = home / ".aider.model.metadata.json"
    before = {"deepseek/deepseek-chat": {"max_tokens": 4096, "max_input_tokens": 32000,
                                         "litellm_provider": "deepseek", "mode": "chat"}}
    path.write_text(json.dumps(before))
    async with running_gateway(engine.url) as gw:
        result = await _write(gw.url, "aider")
    after = json.loads(path.read_text())
    assert after["deepseek/deepseek-chat"] == before["deepseek/deepseek-chat"]
    assert after["openai/coder"] == {"max_tokens": 1024, "max_input_tokens": 2560,
                                     "max_output_tokens": 1024, "litellm_provider": "openai",
                                     "mode": "chat"}
    assert json.loads(_backups(path)[0].read_text()) == before
    assert "aider --model openai/coder" in result.stdout and "eval" in result.stdout


async def test_a_new_config_file_is_made_without_a_backup(engine: FakeProtocolEngine,
                                                          home: Path) -> None:
    async with running_gateway(engine.url) as gw:
        result = await _write(gw.url, "codex")
    path = home / ".codex" / "config.toml"
    assert tomllib.loads(path.read_text())["profiles"]["sm121"]["model"] == "coder"
    assert not _backups(path) and "new file" in result.stdout
