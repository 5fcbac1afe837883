"""`sm121 connect URL --agent NAME`: each printed configuration, taken as the client takes it,
drives the real client library through a real gateway (with and without keys): the anthropic
SDK for Claude Code's Messages, the openai SDK for Codex's Responses and for the chat
clients (OpenCode, aider, the SDK itself). The engine behind is a recording fake; the same
settings against real vLLM are in tests/integration/test_gateway_protocols_sdk.py."""

from __future__ import annotations

import asyncio
import json
import tomllib
from collections.abc import AsyncIterator
from typing import Any

import anthropic
import openai
import pytest
from fake_protocol_engine import FakeProtocolEngine
from gateway_harness import running_gateway
from support import invoke_cli

KEY = "connect-test-key-7f3a"


@pytest.fixture
async def engine() -> AsyncIterator[FakeProtocolEngine]:
    fake = await FakeProtocolEngine(model="coder").start()
    yield fake
    await fake.stop()


async def _connect(url: str, agent: str, *extra: str) -> dict[str, Any]:
    result = await asyncio.to_thread(invoke_cli, "connect", url, "--agent", agent, "--json",
                                     *extra)
    assert KEY not in result.stdout  # the key itself is never printed
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def _env(s: dict[str, Any]) -> dict[str, str]:
    """The variables as the shell sets them: literal values, and those copied from the key's
    variable (SM121_API_KEY holds the key)."""
    assert all(v == "SM121_API_KEY" for v in s["env_from"].values())
    return {**s["env"], **{name: KEY for name in s["env_from"]}}


async def _claude_code(s: dict[str, Any]) -> str:
    env = _env(s)
    assert "ANTHROPIC_API_KEY" in s["unset"]
    client = anthropic.AsyncAnthropic(base_url=env["ANTHROPIC_BASE_URL"],
                                      auth_token=env["ANTHROPIC_AUTH_TOKEN"], api_key=None)
    reply = await client.messages.create(model=env["ANTHROPIC_MODEL"], max_tokens=8,
                                         messages=[{"role": "user", "content": "hi"}])
    assert reply.content[0].text == "hello"  # type: ignore[union-attr]
    return "/v1/messages"


async def _codex(s: dict[str, Any]) -> str:
    config = tomllib.loads(s["files"]["~/.codex/config.toml"])
    assert s["command"].startswith("codex --profile sm121")
    profile = config["profiles"]["sm121"]
    provider = config["model_providers"][profile["model_provider"]]
    assert provider["wire_api"] == "responses"
    assert provider.get("env_key") == s["key_env"]  # keyless: no env_key, no Authorization
    client = openai.AsyncOpenAI(base_url=provider["base_url"], api_key=KEY)
    reply = await client.responses.create(model=profile["model"], input="hi")
    assert reply.output_text == "hello"
    return "/v1/responses"


async def _opencode(s: dict[str, Any]) -> str:
    config = json.loads(s["files"]["~/.config/opencode/opencode.json"])
    provider_id, model = s["command"].split("--model ", 1)[1].split("/", 1)
    provider = config["provider"][provider_id]
    assert model in provider["models"]
    key = provider["options"].get("apiKey", "any")
    key = KEY if key == "{env:SM121_API_KEY}" else key
    return await _chat(provider["options"]["baseURL"], key, model)


async def _aider(s: dict[str, Any]) -> str:
    model = s["command"].split("--model openai/", 1)[1]
    return await _chat(s["env"]["OPENAI_API_BASE"], _env(s)["OPENAI_API_KEY"], model)


async def _openai_sdk(s: dict[str, Any]) -> str:
    await _chat(s["env"]["OPENAI_BASE_URL"], _env(s)["OPENAI_API_KEY"], s["model"])
    client = openai.AsyncOpenAI(base_url=s["env"]["OPENAI_BASE_URL"],
                                api_key=_env(s)["OPENAI_API_KEY"])
    assert (await client.responses.create(model=s["model"], input="hi")).output_text == "hello"
    return "/v1/responses"


async def _chat(base_url: str, key: str, model: str) -> str:
    client = openai.AsyncOpenAI(base_url=base_url, api_key=key)
    reply = await client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": "hi"}])
    assert reply.choices[0].message.content == "hello"
    return "/v1/chat/completions"


DRIVERS = {"claude-code": _claude_code, "codex": _codex, "opencode": _opencode,
           "aider": _aider, "openai-sdk": _openai_sdk}


@pytest.mark.parametrize("keyed", [False, True], ids=["keyless", "keyed"])
@pytest.mark.parametrize("agent", list(DRIVERS))
async def test_each_agents_printed_settings_drive_its_client(
        engine: FakeProtocolEngine, agent: str, keyed: bool,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SM121_API_KEY", KEY)
    async with running_gateway(engine.url, api_keys=(KEY,) if keyed else ()) as gw:
        settings = await _connect(gw.url, agent)
        assert settings["model"] == "coder" and settings["base_url"].startswith(gw.url)
        assert settings["key_env"] == ("SM121_API_KEY" if keyed else None)
        path = await DRIVERS[agent](settings)
    assert engine.seen and engine.seen[-1].path == path
    assert all(s.body["model"] == "coder" for s in engine.seen)


async def test_connect_refuses_a_model_the_endpoint_does_not_serve(
        engine: FakeProtocolEngine) -> None:
    async with running_gateway(engine.url) as gw:
        result = await asyncio.to_thread(invoke_cli, "connect", gw.url, "--agent", "codex",
                                         "--model", "gpt-9", check=False)
    assert result.returncode == 2 and "coder" in result.stderr


async def test_a_keyed_endpoint_without_the_key_says_where_to_put_it(
        engine: FakeProtocolEngine, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SM121_API_KEY", raising=False)
    async with running_gateway(engine.url, api_keys=(KEY,)) as gw:
        result = await asyncio.to_thread(invoke_cli, "connect", gw.url, "--agent", "aider",
                                         check=False)
    assert result.returncode == 2 and "401" in result.stderr
    assert "SM121_API_KEY" in result.stderr


async def test_the_shell_form_exports_the_settings(engine: FakeProtocolEngine) -> None:
    async with running_gateway(engine.url) as gw:
        out = (await asyncio.to_thread(invoke_cli, "connect", gw.url, "--agent",
                                       "claude-code")).stdout
    assert f"export ANTHROPIC_BASE_URL={gw.url}\n" in out
    assert "export ANTHROPIC_MODEL=coder\n" in out and "unset ANTHROPIC_API_KEY" in out


async def test_a_run_id_gives_its_gateway_or_its_engine_with_a_note(
        engine: FakeProtocolEngine) -> None:
    """A run started with --gateway is reached through it; one without is reached directly,
    and the settings say that the gateway is missing."""
    from sm121.runs.state import RunInfo, create_run_dir, now_iso

    async with running_gateway(engine.url) as gw:
        for run_id, gateway in (("connect-gw-run", gw.url), ("connect-bare-run", None)):
            create_run_dir(run_id)
            RunInfo(run_id=run_id, recipe="tiny-cpu", profile="agent", created=now_iso(),
                    base_url=engine.url, model="coder", gateway_url=gateway).save()
        through = await _connect("connect-gw", "openai-sdk")
        bare = await _connect("connect-bare", "openai-sdk")
    assert through["base_url"] == f"{gw.url}/v1" and not any(
        "no gateway" in n for n in through["notes"])
    assert bare["base_url"] == f"{engine.url}/v1" and "no gateway" in bare["notes"][0]


async def test_the_probe_sends_one_tiny_request_on_each_route_the_agent_calls(
        engine: FakeProtocolEngine) -> None:
    async with running_gateway(engine.url) as gw:
        settings = await _connect(gw.url, "claude-code")
    probed = [(s.path, s.body.get("max_tokens")) for s in engine.seen]
    assert probed == [("/v1/messages", 1), ("/v1/messages/count_tokens", None)]
    assert [p["ok"] for p in settings["probe"]] == [True, True]
    headers = {k.lower(): v for k, v in engine.seen[0].headers.items()}
    assert headers["anthropic-version"] == "2023-06-01"
    assert settings["limits"] == {"context": 4096, "output": 1024, "headroom": 512,
                                  "compact_at": 2560}


async def test_an_endpoint_without_the_agents_route_is_refused_plainly() -> None:
    """An engine that serves chat but not the Responses API: Codex's settings would fail at
    its first request, so connect says so; aider (chat) connects."""
    from aiohttp import web
    from support.aiohttp_server import served

    async def models(_: web.Request) -> web.Response:
        return web.json_response({"data": [{"id": "coder", "max_model_len": 4096}]})

    async def chat(_: web.Request) -> web.Response:
        return web.json_response({"choices": [{"message": {"content": "h"}}]})

    app = web.Application()
    app.router.add_get("/v1/models", models)
    app.router.add_post("/v1/chat/completions", chat)
    async with served(app) as url:
        codex = await asyncio.to_thread(invoke_cli, "connect", url, "--agent", "codex",
                                        check=False)
        aider = await asyncio.to_thread(invoke_cli, "connect", url, "--agent", "aider",
                                        "--shell")
    said = " ".join(codex.stderr.split())
    assert codex.returncode == 2 and codex.stdout == ""
    assert "does not serve what codex calls: /v1/responses not served here (HTTP 404" in said
    assert "export OPENAI_API_BASE=" in aider.stdout


async def test_a_wrong_key_says_the_key_is_wrong(engine: FakeProtocolEngine,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MYKEY", "not-the-key")
    async with running_gateway(engine.url, api_keys=(KEY,)) as gw:
        result = await asyncio.to_thread(invoke_cli, "connect", gw.url, "--agent", "codex",
                                         "--key-env", "MYKEY", check=False)
    said = " ".join(result.stderr.split())
    assert result.returncode == 2 and "the key is wrong" in said and "$MYKEY" in said
    assert "is it an sm121 gateway" not in said and "SM121_API_KEY" not in said


async def test_a_missing_key_names_the_variable_given(
        engine: FakeProtocolEngine, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MYKEY", raising=False)
    async with running_gateway(engine.url, api_keys=(KEY,)) as gw:
        result = await asyncio.to_thread(invoke_cli, "connect", gw.url, "--agent", "aider",
                                         "--key-env", "MYKEY", check=False)
    said = " ".join(result.stderr.split())
    assert result.returncode == 2 and "$MYKEY" in said and "SM121_API_KEY" not in said


async def test_host_port_without_a_scheme_is_a_url(engine: FakeProtocolEngine) -> None:
    async with running_gateway(engine.url) as gw:
        settings = await _connect(gw.url.removeprefix("http://"), "aider")
    assert settings["base_url"] == f"{gw.url}/v1"


async def test_a_stopped_run_given_by_id_says_it_is_stopped() -> None:
    from sm121.runs.state import RunInfo, create_run_dir, now_iso

    create_run_dir("connect-stopped-run")
    RunInfo(run_id="connect-stopped-run", recipe="tiny-cpu", profile="agent", created=now_iso(),
            base_url="http://127.0.0.1:9", model="coder", status="stopped").save()
    result = await asyncio.to_thread(invoke_cli, "connect", "connect-stopped-run", "--agent",
                                     "aider", check=False)
    said = " ".join(result.stderr.split())
    assert result.returncode == 2 and "connect-stopped-run is stopped" in said
    assert "Connection refused" not in said


async def test_errors_are_json_with_json(engine: FakeProtocolEngine) -> None:
    async with running_gateway(engine.url) as gw:
        result = await asyncio.to_thread(invoke_cli, "connect", gw.url, "--agent", "codex",
                                         "--model", "gpt-9", "--json", check=False)
    assert result.returncode == 2
    error = json.loads(result.stdout)["error"]
    assert "gpt-9" in error["message"] and "coder" in error["hint"]
